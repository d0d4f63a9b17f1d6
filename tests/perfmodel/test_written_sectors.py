"""What a kernel's writes cost in DRAM: a masked store writes back the sectors it touches, and a
zero-filled output (``torch.zeros*`` in the host code) is a fill kernel over the whole of it."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.evaluate.pipeline import verify
from kernelfoundry.records import ConfigTrace
from kernelfoundry.perfmodel.features import launch_features
from kernelfoundry.perfmodel.hardware import resolve_hardware
from kernelfoundry.perfmodel.model import HardwareArrays, evaluate
from kernelfoundry.perfmodel.tuning import add_zero_fills, plan_configs, sweep
from kernelfoundry.task import load_task

from .tracegen import elementwise_trace

HW = HardwareArrays(resolve_hardware(["h100"]))
N = 1 << 24


def _sparse(trace, keep: float):
    """*trace* with the output's store masked to a share *keep* of its lanes (its sectors all touched)."""
    out = trace.traffic["out"]
    return dataclasses.replace(trace, traffic={**trace.traffic, "out": dataclasses.replace(
        out, store_bytes=out.store_bytes * keep)})


def _dram_write(trace) -> float:
    out = evaluate(launch_features([trace]), np.arange(1), np.full(1, 4), np.full(1, 1), HW)
    return float(out.details["dram_write"][0, 0])


def test_a_masked_store_writes_back_every_sector_it_touches():
    full = elementwise_trace(N, inputs=1)
    assert _dram_write(full) == pytest.approx(N * 4, rel=1e-6)
    assert _dram_write(_sparse(full, 0.5)) == pytest.approx(N * 4, rel=1e-6)


def test_partial_sectors_of_neighbouring_programs_still_merge():
    """Programs whose blocks straddle sectors: each touches one sector more than its share, the
    neighbours fill it, and the tensor is written once."""
    t = elementwise_trace(N, inputs=1, block=1000)
    out = t.traffic["out"]
    t = dataclasses.replace(t, traffic={**t.traffic, "out": dataclasses.replace(
        out, unique_store_bytes=out.unique_store_bytes + 32, store_sectors=out.store_sectors + 1)})
    assert _dram_write(t) == pytest.approx(N * 4, rel=0.01)


def test_zero_fills_are_charged_as_a_fill_launch():
    plain = ConfigTrace(shape_index=0, shape={}, config={}, launches=[elementwise_trace(N, inputs=1)])
    filled = dataclasses.replace(plain, zero_fill_bytes=[float(N * 4)])
    plan = plan_configs([{}], {"num_warps": [4], "num_stages": [1]})
    a, b = sweep(plan, [plain], HW), sweep(plan, [filled], HW)
    fill_s = N * 4 / HW.dram_bw[0, 0] + HW.launch[0, 0]
    assert b.latency[0, 0] - a.latency[0, 0] == pytest.approx(fill_s, rel=1e-6)
    assert b.details["dram_write"][0, 0] - a.details["dram_write"][0, 0] == pytest.approx(N * 4)
    assert b.details["launches"][0, 0] == a.details["launches"][0, 0] + 1
    assert add_zero_fills(a, [plain], HW) is a


SPARSE_RELU = (REPO_DIR / "tests/adversarial/relu/honest/flat.py").read_text() \
    .replace("tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)", "tl.store(y_ptr + offs, x, mask=mask & (x > 0))") \
    .replace("y = torch.empty_like(x)", "y = torch.zeros_like(x)")


def test_a_zeroed_output_with_sparse_stores_scores_below_the_honest_kernel(tmp_path):
    """Before, this kernel was charged half the honest writes and no fill (111% of speed-of-light,
    stopped only by the plausibility cap); on a GPU it moves 3 bytes for the honest kernel's 2."""
    assert "zeros_like" in SPARSE_RELU and "x > 0))" in SPARSE_RELU
    shutil.copytree(REPO_DIR / "experiments/tasks/kernels", tmp_path / "kernels")
    text = (REPO_DIR / "experiments/tasks/relu.yaml").read_text().replace("{M: 4096, N: 393216}", "{M: 1024, N: 32768}")
    (tmp_path / "relu.yaml").write_text(text)
    task = load_task(tmp_path / "relu.yaml")
    honest = verify(task, (REPO_DIR / "tests/adversarial/relu/honest/flat.py").read_text(), ["h100"], compile=False)
    sparse = verify(task, SPARSE_RELU, ["h100"], compile=False)
    assert honest.passed and sparse.passed, (honest.reason, sparse.reason)
    assert all(t.zero_fill_bytes == [1024 * 32768 * 4] for t in sparse.traces)
    assert sparse.objective < honest.objective * 0.75
