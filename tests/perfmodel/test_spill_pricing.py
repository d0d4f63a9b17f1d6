"""Register spills cost their local-memory traffic: what L1 cannot hold goes through L2, and beyond L2 to DRAM."""

import numpy as np
import pytest

from kernelfoundry.perfmodel.features import launch_features
from kernelfoundry.perfmodel.hardware import resolve_hardware
from kernelfoundry.perfmodel.model import HardwareArrays, evaluate
from kernelfoundry.perfmodel.occupancy import CompiledArrays

from .tracegen import softmax_trace

M, N = 4096, 524288            # issue 33: a whole-row softmax, one 524,288-wide block per row


def run(hw, trace, warps, spill_per_thread):
    feat = launch_features([trace])
    compiled = CompiledArrays(registers=np.full((1, 1), 255.0), shared_bytes=np.zeros((1, 1)),
                              spill_bytes=np.full((1, 1), spill_per_thread))
    return evaluate(feat, np.arange(1), np.full(1, warps), np.full(1, 1), hw, compiled=compiled)


@pytest.fixture(scope="module")
def h100():
    return HardwareArrays(resolve_hardware(["h100"]))


def test_spilling_whole_row_softmax_is_slower_than_the_online_one(h100):
    spilled = run(h100, softmax_trace(M, N, block=N, passes=1), 32, 68132.0)   # the compile gate's report
    online = run(h100, softmax_trace(M, N, block=4096, passes=2), 8, 0.0)
    assert float(spilled.latency[0, 0]) > 3 * float(online.latency[0, 0])
    # the local footprint (34 KB x 1024 threads per row) is far beyond L1 and L2: it is DRAM traffic
    traffic = 68132.0 * 1024 * M
    assert float(spilled.details["spill_dram_bytes"][0, 0]) == pytest.approx(traffic, rel=0.05)
    spec = resolve_hardware(["h100"])[0]
    roofline = traffic / (spec.dram_tbps * spec.dram_efficiency * 1e12)
    assert float(spilled.latency[0, 0]) >= roofline
    assert float(spilled.components["dram"][0, 0]) >= roofline


def test_small_spill_stays_in_l1(h100):
    """A few bytes per thread fit in L1: no L2 or DRAM traffic, a small cost at the shared-memory rate."""
    trace = softmax_trace(M, 4096, block=1024, passes=2)
    clean, small = run(h100, trace, 4, 0.0), run(h100, trace, 4, 64.0)
    assert float(small.details["spill_l2_bytes"][0, 0]) == 0.0
    assert float(small.details["spill_dram_bytes"][0, 0]) == 0.0
    assert float(clean.latency[0, 0]) <= float(small.latency[0, 0]) < 1.5 * float(clean.latency[0, 0])
