"""Performance-model benchmark: throughput in (config x hardware) points per second on one
core, and the anchor table (predicted vs. reference figures measured on this workplace's GPUs).

    python experiments/bench_perfmodel.py [--repeats 5] [--smoke]

Traces are hand-built from kernel shapes (tests/perfmodel/tracegen.py), so no GPU and no
Triton interpreter run is needed.  Prints two markdown tables.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")          # one core: numpy without threaded BLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelfoundry.perfmodel import (HardwareArrays, evaluate, launch_features,  # noqa: E402
                                     list_hardware, plan_configs, resolve_hardware, score_candidate, sum_launches, sweep)
from kernelfoundry.task import load_task  # noqa: E402
from tests.perfmodel.tracegen import config_trace, copy_trace, matmul_trace  # noqa: E402

SPACE = {"BLOCK_M": [32, 64, 128, 256], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [32, 64],
         "GROUP_M": [1, 4, 8], "num_warps": [2, 4, 8, 16], "num_stages": [1, 2, 3, 4, 5]}
ANCHORS = [("h100", "copy", 3.0, "TB/s"), ("h100", "matmul", 798.0, "TFLOP/s"),
           ("h200", "copy", 4.3, "TB/s"), ("h200", "matmul", 788.0, "TFLOP/s")]


def matmul_traces(task, M, space=SPACE):
    names = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"]
    out = []
    for bm, bn, bk, g in itertools.product(*(space[n] for n in names)):
        cfg = dict(zip(names, (bm, bn, bk, g)))
        out.append(config_trace([matmul_trace(M, M, M, bm=bm, bn=bn, bk=bk, group_m=g)], cfg,
                                shape=task.target_shapes[0]))
    return out


#: --smoke: a few configs, one repeat (checks the script runs; its rates mean nothing).
SMOKE_SPACE = {"BLOCK_M": [64, 128], "BLOCK_N": [128], "BLOCK_K": [32], "GROUP_M": [8], "num_warps": [4],
               "num_stages": [3]}


def throughput(repeats: int, space=SPACE) -> list[tuple[str, int, float]]:
    task = load_task(REPO / "experiments/tasks/matmul.yaml")
    traces = matmul_traces(task, 4096, space)
    names = list_hardware()
    hw = HardwareArrays(resolve_hardware(names))
    plan = plan_configs([t.config for t in traces], space, cap=4096)
    points = len(plan) * len(names)
    rows = []
    best = min(_timed(lambda: sweep(plan, traces, hw)) for _ in range(repeats))
    rows.append(("model sweep (features + latency, all configs)", points, points / best))
    feat = launch_features([l for t in traces for l in t.launches])
    pad = feat.padded_flop_factor(hw.granules)
    idx = plan.kernel_index
    core = min(_timed(lambda: evaluate(feat, idx, plan.warps, plan.stages, hw, pad=pad)) for _ in range(repeats))
    rows.append(("model core only (evaluate)", points, points / core))
    score_candidate(task, traces, space, names)                 # warm the baseline cache
    full = min(_timed(lambda: score_candidate(task, traces, space, names)) for _ in range(repeats))
    rows.append(("score_candidate (sweep + baseline + feedback)", points, points / full))
    return rows


def _timed(fn) -> float:
    """CPU seconds of this (single-threaded) process: one core, whatever else the machine runs."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def anchors() -> list[tuple[str, str, float, float, str]]:
    hw = HardwareArrays(resolve_hardware(["h100", "h200"]))

    def run(launches, warps, stages):
        feat = launch_features(launches)
        n = len(launches)
        out = evaluate(feat, np.arange(n), np.full(n, warps), np.full(n, stages), hw)
        return sum_launches(out, np.array([0])).latency[:, 0]

    n = 2 ** 28
    copy = 2 * n * 4 / run([copy_trace(n, block=4096)], 4, 1) / 1e12
    M = 8192
    best = np.full(2, np.inf)
    for (bm, bn, bk), warps, stages in itertools.product([(128, 256, 64), (256, 128, 64), (128, 128, 64), (128, 128, 32),
                                                          (64, 256, 32)], [4, 8], [3, 4]):
        best = np.minimum(best, run([matmul_trace(M, M, M, bm=bm, bn=bn, bk=bk, group_m=8, dtype="bf16")], warps, stages))
    mm = 2 * M ** 3 / best / 1e12
    got = {("h100", "copy"): copy[0], ("h100", "matmul"): mm[0], ("h200", "copy"): copy[1], ("h200", "matmul"): mm[1]}
    return [(h, what, ref, got[(h, what)], unit) for h, what, ref, unit in ANCHORS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="a few configs, one repeat (for tests)")
    args = parser.parse_args(argv)
    print("## Throughput (one core)\n")
    print("| what | points (config x hardware) | points / s |\n|---|---:|---:|")
    for what, points, rate in throughput(1 if args.smoke else args.repeats, SMOKE_SPACE if args.smoke else SPACE):
        print(f"| {what} | {points} | {rate:,.0f} |")
    print("\n## Anchors (H100: copy 2^28 fp32 elements; matmul 8192^3 bf16, best of 20 configs)\n")
    print("| hardware | kernel | reference | predicted | error |\n|---|---|---:|---:|---:|")
    for h, what, ref, got, unit in anchors():
        print(f"| {h} | {what} | {ref:g} {unit} | {got:.3g} {unit} | {(got - ref) / ref:+.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
