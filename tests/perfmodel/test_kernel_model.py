"""Kernel-model corrections: dot-accumulate adds, epilogue stores, unaligned rows, warp overlap,
pipelining credit, the longest program."""

import dataclasses

import numpy as np
import pytest

from kernelfoundry.records import TensorTraffic
from kernelfoundry.perfmodel.alignment import scalar_share, unaligned_bytes
from kernelfoundry.perfmodel.features import dot_accumulator_adds, launch_features
from kernelfoundry.perfmodel.hardware import resolve_hardware
from kernelfoundry.perfmodel.model import HardwareArrays, evaluate
from kernelfoundry.task import task_from_dict

from .tracegen import elementwise_trace, matmul_trace, softmax_trace

HW = HardwareArrays(resolve_hardware(["h100"]))


def _latency(launch, warps=4, stages=3, unaligned=frozenset(), full=False):
    out = evaluate(launch_features([launch], unaligned), np.arange(1), np.full(1, warps), np.full(1, stages), HW)
    return out if full else float(out.latency[0, 0])


def test_accumulate_adds_of_a_dot_loop_are_not_charged():
    t = matmul_trace(4096, 4096, 4096, bm=128, bn=128, bk=32)
    adds = dot_accumulator_adds(t)
    assert adds == pytest.approx(128 * 128 * 4096 / 32)             # M x N per K step
    plus = matmul_trace(4096, 4096, 4096, bm=128, bn=128, bk=32)
    plus.elementwise_ops += adds                                   # what `acc += tl.dot(a, b)` traces
    assert launch_features([plus]).elementwise_ops[0] == pytest.approx(launch_features([t]).elementwise_ops[0])


def test_dot_epilogue_store_is_serial():
    out = _latency(matmul_trace(32768, 32768, 64, bm=128, bn=128, bk=64), full=True)
    assert out.components["epilogue"][0, 0] == pytest.approx(32768 * 32768 * 2 / (3.35e12 * 0.9), rel=0.05)
    assert out.latency[0, 0] > out.components["epilogue"][0, 0] + out.components["compute-matrix"][0, 0] * 0.9


def test_unaligned_rows_lose_vector_width():
    task = task_from_dict({"name": "t", "reference": "def reference(x):\n    return x\n",
                           "inputs": {"x": {"shape": ["M", "N"], "dtype": "float32"}},
                           "shapes": {"check": [{"M": 2, "N": 2}], "target": [{"M": 4096, "N": 4095}]},
                           "seeds": ["x.py"]}, check_files=False)
    bad = unaligned_bytes(task, {"M": 4096, "N": 4095})
    assert bad == frozenset({4096 * 4095 * 4}) and not unaligned_bytes(task, {"M": 4096, "N": 4096})
    launch = elementwise_trace(4096 * 4095, inputs=1, block=4096)
    launch.traffic["x0"] = TensorTraffic(**{**launch.traffic["x0"].__dict__, "tensor_bytes": 4096 * 4095 * 4})
    assert scalar_share(launch, bad) == pytest.approx(1.0)   # the output has the input's size: unaligned too
    launch.traffic["out"] = TensorTraffic(**{**launch.traffic["out"].__dict__, "tensor_bytes": 4096 * 4096 * 4})
    assert scalar_share(launch, bad) == pytest.approx(0.5)
    assert _latency(launch, unaligned=bad) > 1.15 * _latency(launch)


def test_many_warps_overlap_memory_and_math_outside_dot_loops():
    heavy = elementwise_trace(2 ** 24, inputs=1, block=16384, ops=60.0)
    assert _latency(heavy, warps=32, stages=1) < 0.85 * _latency(heavy, warps=4, stages=1)


def test_pipelining_credit_follows_the_loads_that_feed_dots():
    gemm = matmul_trace(4096, 4096, 4096, bm=128, bn=128, bk=32)
    stages = _latency(gemm, stages=4, full=True).details["stages_effective"][0, 0]
    assert stages == pytest.approx(4.0, rel=0.05), "a GEMM's loads all feed its dot"
    # a row loop with a tiny dot on constant operands: nothing it loads feeds the dot
    rows = softmax_trace(4096, 65536, block=1024, passes=2)
    dummy = dataclasses.replace(rows, dot_flops={"fp16": 2.0 * 16 * 16 * 16 * rows.loop_trips},
                                dot_shapes=[(16, 16, 16, "fp16")], dot_operand_bytes=0.0)
    out = _latency(dummy, stages=4, full=True)
    assert out.details["stages_effective"][0, 0] == pytest.approx(float(HW.auto_buffers[0, 0]))
    assert _latency(dummy, stages=4) == pytest.approx(_latency(dummy, stages=1))


def test_the_longest_program_bounds_the_latency_chain():
    # one program loops over all rows; padding the grid with idle programs must not hide its chain
    alone = softmax_trace(1, 1 << 20, block=1024, passes=1)
    alone = dataclasses.replace(alone, loop_trips=1024.0, max_loop_trips=1024.0)
    padded = dataclasses.replace(alone, grid=(257, 1, 1), num_programs=257, loop_trips=1024.0 / 257,
                                 program_bytes_spread=257.0,
                                 traffic={k: dataclasses.replace(
                                     t, load_bytes=t.load_bytes / 257, store_bytes=t.store_bytes / 257,
                                     load_sectors=t.load_sectors / 257, store_sectors=t.store_sectors / 257,
                                     unique_load_bytes=t.unique_load_bytes / 257,
                                     unique_store_bytes=t.unique_store_bytes / 257,
                                     max_unique_load_bytes=t.unique_load_bytes) for k, t in alone.traffic.items()})
    assert _latency(padded) >= 0.95 * _latency(alone)
