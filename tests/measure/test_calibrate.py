"""calibrate: recovers known factors from fake-timed rows; reads and writes its files."""

import math

import pytest

from kernelfoundry.calibrate import main, split
from kernelfoundry.calibrate.fit import fit, with_figures
from kernelfoundry.calibrate.rows import CalibrationError, kernel_row, read_rows
from kernelfoundry.measure.timer import FakeTimer, Hint
from kernelfoundry.perfmodel.hardware import load_hardware

FACTORS = {"dram": 1.25, "l2": 0.8, "compute-matrix": 1.1}
OVERHEAD_S = 4e-6


def synthetic_rows(spec, noise=0.0):
    timer = FakeTimer(factors=FACTORS, overhead_s=OVERHEAD_S, noise=noise)
    rows = []
    for i in range(60):
        bound = ("dram", "l2", "compute-matrix")[i % 3]
        launches = 1 + i % 3
        launch_s = launches * spec.launch_overhead_us * 1e-6
        predicted = launch_s + 10 ** (-5 + 3 * (i / 60))           # 10 us .. 10 ms of work
        measured = timer.time(None, Hint(predicted, bound, launch_s, launches)).median_s
        rows.append(kernel_row(f"r{i}", bound, measured, predicted, bound, launch_s, spec, "synthetic"))
    return rows


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_recovers_synthetic_factors_within_2_percent(noise):
    spec = load_hardware("h100")
    result = fit(synthetic_rows(spec, noise), spec)
    expected = {"dram_efficiency": spec.dram_efficiency / FACTORS["dram"],
                "l2_tbps": spec.l2_tbps / FACTORS["l2"],
                "matrix_efficiency": spec.matrix_efficiency / FACTORS["compute-matrix"],
                "launch_overhead_us": OVERHEAD_S * 1e6}
    for name, value in expected.items():
        assert result.after[name] == pytest.approx(value, rel=0.02), name
    assert "library_efficiency.gemm" in result.untouched          # no eager row: left as it is
    after = with_figures(spec, result.after)
    assert all(abs(math.log(r.predict(after) / r.measured_s)) < 0.03 for r in synthetic_rows(spec, noise))


def test_split_holds_out_every_fifth():
    fit_rows, held = split(list(range(20)), 5)
    assert held == [4, 9, 14, 19] and len(fit_rows) == 16
    assert split(list(range(6)), 5) == (list(range(6)), [])


def test_dataset_on_other_hardware_is_refused():
    with pytest.raises(CalibrationError, match="measured on a100-pcie; calibrate it with --hardware a100-pcie"):
        read_rows("experiments/fidelity/liger_a100.yaml", load_hardware("h100"))


def test_fidelity_kernel_rows_improve_and_write(tmp_path, capsys):
    out = tmp_path / "a100-pcie-calibrated.yaml"
    assert main(["experiments/fidelity/liger_a100.yaml", "--hardware", "a100-pcie", "--write", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "held-out rows" in text and f"wrote {out}" in text
    spec = load_hardware(out)
    assert spec.name == "a100-pcie-calibrated"
    assert spec.calibration["points"] == 20 and spec.calibration["held_out"] == 5
    res = spec.calibration["residuals"]
    assert res["fit"]["all"]["geomean_error_after"] < res["fit"]["all"]["geomean_error_before"]
    assert res["held_out"]["all"]["geomean_error_after"] < res["held_out"]["all"]["geomean_error_before"]
    written = out.read_text()
    assert "# calibrated: 20 measurements, published: liger_a100," in written
    assert spec.dram_efficiency != load_hardware("a100-pcie").dram_efficiency


def test_bad_inputs_name_the_file(tmp_path, capsys):
    bad = tmp_path / "m.csv"
    bad.write_text("row,kernel\nkernel,x\n")
    assert main([str(bad), "--hardware", "h100"]) == 2
    assert f"CSV {bad}: columns" in capsys.readouterr().err
    assert main([str(tmp_path / "none.csv"), "--hardware", "h100"]) == 2
    assert "no such file" in capsys.readouterr().err
