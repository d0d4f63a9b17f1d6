"""The nine fidelity checks of the performance model (issue 4), on hand-built traces."""

import numpy as np
import pytest

from kernelfoundry.perfmodel.features import launch_features
from kernelfoundry.perfmodel.hardware import list_hardware, resolve_hardware
from kernelfoundry.perfmodel.model import HardwareArrays, evaluate, sum_launches
from kernelfoundry.perfmodel.occupancy import L0C, SMEM, UB

from .tracegen import (bias_add_trace, copy_trace, elementwise_trace, matmul_trace,
                       transposed_read_copy_trace)

ALL = ["h100", "a100", "h200", "mi300x", "max1550", "ascend910b2"]
GPUS = ALL[:5]
# Warps that hold a 128x128 fp32 accumulator without spilling (Max 1550: 16-lane sub-groups, 128 GRF).
WARPS = {"h100": 4, "a100": 4, "h200": 4, "mi300x": 4, "max1550": 16, "ascend910b2": 4}


@pytest.fixture(scope="module")
def hw():
    assert set(ALL) <= set(list_hardware())
    return HardwareArrays(resolve_hardware(ALL))


def predict(hw, launches, *, warps=4, stages=3, full=False):
    """Total latency per hardware of one config made of *launches*."""
    feat = launch_features(launches)
    n = len(launches)
    out = evaluate(feat, np.arange(n), np.full(n, warps), np.full(n, stages), hw)
    out = sum_launches(out, np.array([0]))
    return out if full else out.latency[:, 0]


def idx(name):
    return ALL.index(name)


def test_strided_transposed_read_copy_at_least_4x_slower(hw):
    n = 2 ** 27                                    # 512 MB of fp32
    coalesced = predict(hw, [copy_trace(n, block=8192)])
    strided = predict(hw, [transposed_read_copy_trace(2 ** 24, 8, block=8192)])
    assert np.all(np.isfinite(strided))
    assert np.all(strided / coalesced >= 4.0), strided / coalesced


def test_grouped_ordering_beats_row_major_on_large_matmul(hw):
    M = 8192
    for name in ("a100", "h100"):
        row = predict(hw, [matmul_trace(M, M, M, bm=128, bn=128, bk=64, group_m=1)], full=True)
        grouped = predict(hw, [matmul_trace(M, M, M, bm=128, bn=128, bk=64, group_m=8)], full=True)
        i = idx(name)
        assert grouped.details["dram_read"][i, 0] < 0.75 * row.details["dram_read"][i, 0]
        speedup = row.latency[i, 0] / grouped.latency[i, 0]
        assert 1.02 < speedup < 1.3, (name, speedup)     # Triton tutorial 03 on A100: 220 -> 245 TFLOPS


def test_tiny_tiles_much_slower_than_128_tiles(hw):
    M = 4096
    for h, name in enumerate(ALL):
        small = predict(hw, [matmul_trace(M, M, M, bm=16, bn=16, bk=16)], warps=1, stages=3)[h]
        large = predict(hw, [matmul_trace(M, M, M, bm=128, bn=128, bk=32)], warps=WARPS[name], stages=3)[h]
        assert small / large >= 4.0, (name, small / large)


def test_fused_bias_relu_beats_three_kernels_by_the_bytes_saved(hw):
    M = N = K = 4096
    fused = predict(hw, [matmul_trace(M, N, K, bm=128, bn=128, bk=32, bias=True, relu=True)])
    unfused = predict(hw, [matmul_trace(M, N, K, bm=128, bn=128, bk=32), bias_add_trace(M, N, block=4096),
                           bias_add_trace(M, N, block=4096, relu=True)])
    assert np.all(fused < unfused)
    saved_bytes = 4 * M * N * 2                    # C read + written twice more, fp16
    specs = hw.specs
    expected = np.array([saved_bytes / (s.dram_tbps * 1e12 * s.dram_efficiency) + 2 * s.launch_overhead_us * 1e-6
                         for s in specs])
    ratio = (unfused - fused) / expected
    assert np.all((ratio > 0.7) & (ratio < 1.6)), ratio


def test_large_elementwise_reaches_hbm_bandwidth(hw):
    n = 2 ** 28
    t = predict(hw, [elementwise_trace(n, inputs=2, block=8192)])
    achieved = 3 * n * 4 / t
    peak = np.array([s.dram_tbps * 1e12 for s in hw.specs])
    eff = np.array([s.dram_efficiency for s in hw.specs])
    assert np.all(achieved / peak >= 0.95 * eff)
    for name in ("h100", "a100", "h200"):
        assert achieved[idx(name)] / peak[idx(name)] >= 0.80


def test_one_stage_matmul_slower_than_three(hw):
    trace = matmul_trace(4096, 4096, 4096, bm=128, bn=128, bk=32)
    for h, name in enumerate(ALL):
        one = predict(hw, [trace], warps=WARPS[name], stages=1)[h]
        three = predict(hw, [trace], warps=WARPS[name], stages=3)[h]
        assert one > (1.15 if name in ("h100", "a100", "h200") else 1.03) * three, (name, one / three)


def _tile_grid(tiles):
    """The most square (rows, cols) factorisation of *tiles*."""
    rows = max(r for r in range(1, int(tiles ** 0.5) + 1) if tiles % r == 0)
    return rows, tiles // rows


@pytest.mark.parametrize("name,bm,low", [("a100", 128, 1.7), ("max1550", 128, 1.7), ("ascend910b2", 128, 1.7),
                                          ("h100", 256, 1.5), ("h200", 256, 1.5), ("mi300x", 128, 1.5)])
def test_wave_quantization_one_extra_tile_doubles_time(hw, name, bm, low):
    """SMs vs SMs+1 matmul tiles (e.g. 108 = 9 x 12 vs 109 = 1 x 109 on A100).

    Where a single wave of tiles is partly L2-bound in the model (H100/H200: 10 TB/s L2 for
    132 SMs; MI300X) the extra tile costs ~1.6x rather than 2x.
    """
    i, cores = idx(name), hw.specs[idx(name)].cores
    times = []
    for tiles in (cores, cores + 1):
        rows, cols = _tile_grid(tiles)
        times.append(predict(hw, [matmul_trace(bm * rows, 128 * cols, 16384, bm=bm, bn=128, bk=64)],
                             warps=8 if bm == 256 else 4)[i])
    assert low < times[1] / times[0] < 2.2, times[1] / times[0]


def test_wave_quantization_of_compute_bound_programs(hw):
    """Programs = cores vs cores + 1 of a math-heavy kernel: the extra program costs a full wave."""
    for h, spec in enumerate(hw.specs):
        cores = spec.vector_cores or spec.cores
        t = [predict(hw, [elementwise_trace(n * 1024, inputs=1, block=1024, ops=20000.0, transcendental=200.0)],
                     warps=8)[h]
             for n in (cores, cores + 1)]
        assert 1.8 < t[1] / t[0] < 2.2, (spec.name, t[1] / t[0])


def test_configs_over_on_chip_capacity_are_invalid(hw):
    big = predict(hw, [matmul_trace(4096, 4096, 4096, bm=256, bn=256, bk=64)], stages=4, full=True)
    for name in GPUS:
        assert np.isinf(big.latency[idx(name), 0]) and big.reason[idx(name), 0] == SMEM
    npu = idx("ascend910b2")
    assert np.isinf(big.latency[npu, 0]) and big.reason[npu, 0] == L0C     # 256x256 fp32 accumulator > 128 KiB
    ub = predict(hw, [elementwise_trace(2 ** 26, block=65536)], full=True)
    assert np.isinf(ub.latency[npu, 0]) and ub.reason[npu, 0] == UB
    assert np.all(np.isfinite(ub.latency[[idx(n) for n in GPUS], 0]))
    fits = predict(hw, [matmul_trace(4096, 4096, 4096, bm=128, bn=128, bk=32)], stages=2, full=True)
    assert np.all(fits.reason[:, 0] == 0)


def _best_matmul_tflops(hw, M, dtype="bf16"):
    configs = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (256, 128, 64, 8, 4),
               (128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (64, 256, 32, 4, 4), (128, 64, 32, 4, 4)]
    best = np.full(len(hw.specs), np.inf)
    for bm, bn, bk, warps, stages in configs:
        t = predict(hw, [matmul_trace(M, M, M, bm=bm, bn=bn, bk=bk, group_m=8, dtype=dtype)],
                    warps=warps, stages=stages)
        best = np.minimum(best, t)
    return 2.0 * M ** 3 / best / 1e12


@pytest.mark.parametrize("name,copy_tbps,matmul_tflops", [("h100", 3.0, 798.0), ("h200", 4.3, 788.0)])
def test_anchors_within_25_percent(hw, name, copy_tbps, matmul_tflops):
    i = idx(name)
    n = 2 ** 28
    t = predict(hw, [copy_trace(n, block=4096)])[i]
    assert 2 * n * 4 / t / 1e12 == pytest.approx(copy_tbps, rel=0.25)
    assert _best_matmul_tflops(hw, 8192)[i] == pytest.approx(matmul_tflops, rel=0.25)
