"""The hardware library: every file loads; the loader's errors name file, field and known names."""

import json

import pytest
import yaml

from kernelfoundry import hardware as cli
from kernelfoundry.errors import HardwareError
from kernelfoundry.perfmodel.hardware import (HARDWARE_DIR, dtype_class, list_hardware, load_hardware,
                                              resolve_hardware)

REQUIRED = {"h100", "a100", "h200", "mi300x", "max1550", "ascend910b2"}


def test_library_holds_required_targets_and_all_load():
    assert REQUIRED <= set(list_hardware())
    for name in list_hardware():
        spec = load_hardware(name)
        assert spec.name == name and spec.vector_tflops["fp32"] > 0 and spec.dram_tbps > 0
        assert name in spec.summary() or spec.description in spec.summary()


def test_table_figures_match_design():
    h100, npu = load_hardware("h100"), load_hardware("ascend910b2")
    assert h100.matrix_tflops["bf16"] == pytest.approx(989.4) and h100.cores == 132
    assert npu.is_npu and npu.npu["ub_bytes"] == 196608 and npu.npu["l0c_bytes"] == 131072
    assert npu.matrix_tflops["fp16"] == pytest.approx(2 * 16 ** 3 * 24 * 1.8e9 / 1e12, rel=1e-3)


def test_every_figure_has_a_source_comment():
    for path in HARDWARE_DIR.glob("*.yaml"):
        for line in path.read_text().splitlines():
            key = line.split(":")[0].strip()
            if line and not line.startswith((" ", "#")) and key not in ("name", "description", "kind", "vendor"):
                value = line.split(":", 1)[1].strip()
                if value and not value.startswith("{"):
                    assert "#" in line, f"{path.name}: '{key}' has no source comment"


def test_unknown_name_lists_known_ones():
    with pytest.raises(HardwareError, match=r"unknown hardware 'b300'.*h100"):
        resolve_hardware(["h100", "b300"])


def _write(tmp_path, **changes):
    data = yaml.safe_load((HARDWARE_DIR / "h100.yaml").read_text())
    for k, v in changes.items():
        if v is None:
            data.pop(k)
        else:
            data[k] = v
    path = tmp_path / "custom.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("changes,pattern", [
    ({"dram_tbps": None}, r"custom.yaml: field 'dram_tbps' is missing"),
    ({"dram_efficiency": 1.5}, r"field 'dram_efficiency' must lie in"),
    ({"cores": "many"}, r"field 'cores' must be a number"),
    ({"matrix_tflops": {"fp17": 3.0}}, r"field 'matrix_tflops.fp17' is not a known dtype"),
    ({"kind": "fpga"}, r"field 'kind' must be one of gpu, npu"),
    ({"bogus": 1}, r"unknown field\(s\) 'bogus'"),
    ({"smem_bytes_per_program": 10 ** 7}, r"smem_bytes_per_program' exceeds"),
])
def test_loader_errors_name_file_and_field(tmp_path, changes, pattern):
    with pytest.raises(HardwareError, match=pattern):
        load_hardware(_write(tmp_path, **changes))


def test_custom_file_by_path(tmp_path):
    spec = load_hardware(_write(tmp_path, name="h100_custom", dram_tbps=3.0))
    assert spec.name == "h100_custom" and spec.dram_bw == 3.0e12


def test_dtype_classes():
    assert [dtype_class(d) for d in ("float16", "bf16", "fp8e4nv", "i8", "fp32", "float64")] == \
        ["fp16", "bf16", "fp8", "int8", "fp32", "fp64"]


def test_listing_command(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in REQUIRED)
    assert cli.main(["ascend910b2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ascend910b2"]["npu"]["ub_bytes"] == 196608
    assert cli.main(["nope"]) == 2
    assert "known hardware" in capsys.readouterr().err
