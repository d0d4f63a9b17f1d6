"""The dataset importers reproduce the committed datasets; the calibration command runs."""

import csv
import importlib.util
import json

import pytest
import yaml

from kernelfoundry import REPO_DIR
from kernelfoundry.fidelity.calibrate import main as calibrate

from .common import FIDELITY_DIR

SHARED = REPO_DIR.parents[0] / "shared" / "fidelity"


@pytest.mark.skipif(not (SHARED / "kernelbench_h100.yaml").is_file(), reason="../shared/fidelity is not here")
def test_importer_reproduces_the_committed_datasets(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("import_shared", FIDELITY_DIR / "import_shared.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    assert module.main([str(SHARED)]) == 0
    for name in ("kernelbench_h100.yaml", "liger_a100.yaml", "liger_a100_eager.yaml"):
        assert (tmp_path / name).read_text() == (FIDELITY_DIR / name).read_text(), name


def _liger_csv(path, gpu_name):
    """A benchmark CSV in Liger-Kernel's column layout holding the committed H100 NVL rows, plus rows the
    importer must leave out (another provider, another mode, memory, a kernel with no task here)."""
    configs = {"rms_norm": {"M": 2048, "dtype": "torch.bfloat16", "eps": 1e-06},
               "layer_norm": {"M": 4096, "dtype": "torch.float32", "eps": 1e-06}, "cross_entropy": {"B": 8, "T": 2048},
               "rope H": {"dtype": "torch.bfloat16", "seq_len": 2048, "num_q_heads": 32, "num_kv_heads": 8},
               "rope T": {"dtype": "torch.bfloat16", "hidden_size": 8192, "num_q_heads": 32, "num_kv_heads": 8}}
    cols = ["kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit", "x_name",
            "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80", "extra_benchmark_config_str", "gpu_name",
            "timestamp", "liger_version"]
    rows = []
    for stem, provider in (("liger_h100nvl", "liger"), ("liger_h100nvl_eager", "huggingface")):
        for r in yaml.safe_load((FIDELITY_DIR / f"{stem}.yaml").read_text())["rows"]:
            name, sweep = r["id"].split("/")
            x_name, x = sweep.split("=")
            cfg = configs[f"{name} {x_name}" if name == "rope" else name]
            rows.append([name, provider, "forward", "speed", "ms", x_name, "x", x, repr(r["measured_ms"]),
                         repr(r["spread_ms"][0]), repr(r["spread_ms"][1]), json.dumps(cfg), gpu_name,
                         "2025-01-25 23:42:32", "0.5.2"])
    base = rows[0]
    rows += [["rms_norm", "torchcompile"] + base[2:], base[:2] + ["full"] + base[3:],
             base[:3] + ["memory", "MB"] + base[5:], ["geglu"] + base[1:]]
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(cols)
        writer.writerows(rows)


def test_csv_importer_reproduces_the_committed_h100_nvl_datasets(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(FIDELITY_DIR))
    spec = importlib.util.spec_from_file_location("import_liger_csv", FIDELITY_DIR / "import_liger_csv.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    _liger_csv(tmp_path / "bench.csv", "NVIDIA H100 NVL")
    assert module.main([str(tmp_path / "bench.csv")]) == 0
    for name in ("liger_h100nvl.yaml", "liger_h100nvl_eager.yaml"):
        assert (tmp_path / name).read_text() == (FIDELITY_DIR / name).read_text(), name
    out = capsys.readouterr().out
    assert "25 rows (rms_norm 6, layer_norm 5, rope 8, cross_entropy 6)" in out
    assert "geglu: no Liger-style kernel or task here: 1" in out and "torchcompile rows" in out
    _liger_csv(tmp_path / "other.csv", "NVIDIA A100 80GB PCIe")
    with pytest.raises(SystemExit, match="expected 'NVIDIA H100 NVL'"):
        module.main([str(tmp_path / "other.csv")])


def test_tutorial_importer_reproduces_the_committed_gemm_datasets(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(FIDELITY_DIR))
    spec = importlib.util.spec_from_file_location("import_triton_tutorial", FIDELITY_DIR / "import_triton_tutorial.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    assert module.main([]) == 0
    for name in ("triton_tutorial_a100.yaml", "triton_tutorial_a100_eager.yaml"):
        assert (tmp_path / name).read_text() == (FIDELITY_DIR / name).read_text(), name
    # measured_ms = 2 M N K / (TFLOPS * 1e9): 4096^3 at 216.131602 TFLOPS is 0.6359 ms
    rows = yaml.safe_load((tmp_path / "triton_tutorial_a100.yaml").read_text())["rows"]
    assert rows[-1]["id"] == "matmul/M=N=K=4096" and rows[-1]["measured_ms"] == pytest.approx(0.63591, rel=1e-4)
    page = tmp_path / "page.rst.txt"                  # --page checks the transcription against a copy of the page
    table = "\n".join(f"    {i}  {m:.1f}  {m:.1f}  {m:.1f}  {c:f}  {t:f}" for i, (m, c, t) in enumerate(module.FP16_TFLOPS))
    page.write_text(f"matmul-performance-fp16:\n   M  N  K  cuBLAS  Triton\n{table}\nmatmul-performance-fp8:\n")
    assert module.main(["--page", str(page)]) == 0
    page.write_text(page.read_text().replace("216.131602", "216.2"))
    with pytest.raises(SystemExit, match="differs from FP16_TFLOPS"):
        module.main(["--page", str(page)])


def test_calibrate_prints_fits(capsys):
    assert calibrate([str(FIDELITY_DIR / "kernelbench_h100.yaml"), "--sweeps", "1"]) == 0
    out = capsys.readouterr().out
    assert "CONV_TC = (" in out and "rms log error over" in out
