"""The compile gate in the verifier: compiled facts reach the scores, the model uses them, and a
kernel that compiles for no GPU of the run fails with the compiler's message."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernelfoundry.evaluate.pipeline import verify
from kernelfoundry.perfmodel.hardware import load_hardware
from kernelfoundry.perfmodel.model import HardwareArrays
from kernelfoundry.perfmodel.occupancy import CompiledArrays, occupancy
from kernelfoundry.task import load_task, task_from_dict

REPO = Path(__file__).resolve().parents[2]
MATMUL = load_task(REPO / "experiments" / "tasks" / "matmul.yaml")
SMALL_DOT = (REPO / "tests" / "compiler" / "kernels" / "small_dot.py").read_text()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("compile-cache")


def test_matmul_seed_compiles_and_the_model_uses_the_compilers_figures(cache_dir):
    source = MATMUL.seeds[0].read_text()
    r = verify(MATMUL, source, ["h100", "ascend910b2"], compile_cache=cache_dir)
    assert r.passed, r.reason
    gate = next(g for g in r.gates if g.name == "compile")
    assert [g.name for g in r.gates][-3:] == ["model", "compile", "confirm"]
    h100 = gate.details["hardware"]["h100"]
    assert h100["status"] == "ok" and h100["target"] == "cuda:90:32"
    assert gate.details["hardware"]["ascend910b2"]["status"] == "no_backend"
    assert "registers" in r.hardware["h100"].compiled and "occupancy" in r.hardware["h100"].compiled
    assert r.hardware["ascend910b2"].compiled == ""
    assert r.hardware["h100"].estimated_latency_s is not None and r.hardware["h100"].estimated_latency_s > 0
    assert "no Triton backend" in gate.reason and "mma.sync" in gate.reason
    again = verify(MATMUL, source, ["h100", "ascend910b2"], compile_cache=cache_dir)
    done = next(g for g in again.gates if g.name == "compile").details
    assert done["cache_misses"] == 0 and done["cache_hits"] >= 1 and again.objective == r.objective
    off = verify(MATMUL, source, ["h100"], compile=False)
    assert "compile" not in [g.name for g in off.gates] and off.hardware["h100"].compiled == ""


def test_a_kernel_that_compiles_nowhere_fails_the_compile_gate(cache_dir):
    """An 8x8 tl.dot runs in the interpreter but Triton's NVIDIA backend refuses dots below 16."""
    task = task_from_dict({
        "name": "dot8", "reference": "import torch\ndef reference(a, b):\n    return a @ b\n",
        "inputs": {"a": {"shape": [8, 8], "dtype": "float16"}, "b": {"shape": [8, 8], "dtype": "float16"}},
        "shapes": {"check": [{}], "target": [{}]}, "tolerance": {"atol": 1e-2, "rtol": 1e-2},
        "seeds": [str(REPO / "tests" / "compiler" / "kernels" / "small_dot.py")], "hardware": ["h100"]})
    r = verify(task, SMALL_DOT, ["h100"], compile_cache=cache_dir)
    assert (r.passed, r.gate) == (False, "compile"), r.reason
    assert "does not compile for any GPU of the run" in r.reason and "CompilationError" in r.reason
    assert verify(task, SMALL_DOT, ["h100"], compile=False).passed        # the interpreter alone let it through


def test_compiled_registers_and_shared_memory_replace_the_estimates():
    hw = HardwareArrays([load_hardware("h100")])
    common = dict(has_dot=np.array([[True]]), warps=np.array([[4.0]]), stages=np.array([[2.0]]),
                  dot_operand_bytes=np.array([[16384.0]]), max_block_elems=np.array([[128 * 128.0]]),
                  a_tile_bytes=np.array([[8192.0]]), b_tile_bytes=np.array([[8192.0]]),
                  c_tile_elems=np.array([[128 * 128.0]]), vec_buffers=hw.auto_buffers)
    estimated = occupancy(hw, **common)
    compiled = CompiledArrays(registers=np.array([[255.0]]), shared_bytes=np.array([[98304.0]]),
                              spill_bytes=np.array([[64.0]]))
    real = occupancy(hw, **common, compiled=compiled)
    assert real.smem_bytes[0, 0] == 98304.0 and real.resident[0, 0] == 2      # 2 x 96 KB per SM, 255 regs
    assert real.spill_bytes_per_trip[0, 0] == 64.0 * 128
    unknown = CompiledArrays(*(np.array([[np.nan]]) for _ in range(3)))
    same = occupancy(hw, **common, compiled=unknown)
    assert same.resident[0, 0] == estimated.resident[0, 0] and same.smem_bytes[0, 0] == estimated.smem_bytes[0, 0]


def test_the_speed_of_light_cap_holds_after_the_compile_gate_rescores(monkeypatch, cache_dir):
    """The compile gate re-scores with the compiler's figures; a re-score past 105% of speed of
    light (work the trace missed, seen only once occupancy changed) fails at the model gate."""
    import dataclasses

    from kernelfoundry.evaluate.judge import compile_gate as gate_module
    from kernelfoundry.records import GateResult

    def inflated(source, task, traces, space, hardware, score, **kw):
        hw = {name: dataclasses.replace(s, sol_fraction=1.64) for name, s in score.hardware.items()}
        return GateResult(name="compile", passed=True), dataclasses.replace(score, hardware=hw), {}

    monkeypatch.setattr(gate_module, "compile_gate", inflated)
    r = verify(MATMUL, MATMUL.seeds[0].read_text(), ["h100"], compile_cache=cache_dir)
    assert (r.passed, r.gate) == (False, "model"), r.reason
    assert "164% of h100's speed of light" in r.reason
    assert next(g for g in r.gates if g.name == "model").passed is False
