"""The census: a large random sample of programs, loops cut to their first trip, finds planned work
that the few traced programs do not stand for (work left to rare programs) and scales it in."""

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

import random
from pathlib import Path

import numpy as np
import pytest

from kernelfoundry.evaluate.trace.census import (CENSUS_PROGRAMS, CensusError, census_pids, coverage_factors, judge_census, traffic_factors,
                                          kernels_have_loops, planned_work)
from kernelfoundry.evaluate.inprocess import trace_trusted
from kernelfoundry.task import task_from_dict

KERNELS = Path(__file__).resolve().parent / "kernels"
ROWS, BLOCKS, BLOCK = 1024, 4, 32
SUMS = task_from_dict({
    "name": "row_sums", "reference": "import torch\ndef reference(x):\n    return x.view(-1, %d, %d).sum(1)\n" % (
        BLOCKS, BLOCK),
    "inputs": {"x": {"shape": ["R", BLOCKS * BLOCK], "dtype": "float32"}},
    "shapes": {"check": [{"R": 128}], "target": [{"R": ROWS}]},
    "tolerance": {"atol": 1e-4, "rtol": 1e-4}, "seeds": [str(KERNELS / "row_sums.py")]})
ROW_BYTES = BLOCKS * BLOCK * 4


def _loop(n, parent=0, kind="for"):
    return ["k:1", kind, n, parent, [0] if n else [], []]


def test_planned_work_counts_a_nested_loop_once_per_trip_of_the_loop_around_it():
    # an outer loop of 4 trips (its first trip: id 1) holding an inner loop of 8
    assert planned_work([_loop(4), _loop(8, parent=1)], [[0, 0], [1, 0]]) == 1 + 4 + 4 * 8
    assert planned_work([], []) == 1.0
    with pytest.raises(CensusError):
        planned_work([_loop(4), _loop(8, parent=5)], [[0, 0]])


def _record(works):
    """A census record whose program i plans works[i] - 1 trips of one loop."""
    return {"loops": True, "programs": [[pid, [_loop(w - 1)] if w > 1 else [], [[0, 0]] if w > 1 else [], []]
                         for pid, w in enumerate(works)], "traced": []}


def test_equal_programs_leave_the_counts_alone_and_rare_heavy_ones_scale_them():
    census = judge_census(_record([5] * 200), 200, 4, traced_work=5.0)
    assert (census.programs, census.scale, census.spread) == (200, 1.0, 1.0)
    works = [5 + (150 if pid % 64 == 7 else 0) for pid in range(256)]
    census = judge_census(_record(works), 256, 4, traced_work=5.0)
    assert census.scale == pytest.approx(sum(works) / 256 / 5.0) and census.scale > 1.4
    assert census.spread == pytest.approx(155 / (sum(works) / 256)) and census.max_loop_trips == 154


@pytest.mark.parametrize("record, text", [
    (None, "malformed"),
    ({"programs": "x"}, "malformed"),
    ({"programs": []}, "malformed"),
    (_record([2] * 10), "ran 10 programs"),
    ({"loops": True, "programs": [[300, [], [], []]] + _record([2] * 255)["programs"]}, "out of range"),
    ({"loops": True, "programs": [[0, [], [], []]] + _record([2] * 255)["programs"]}, "repeated"),
    ({**_record([2] * 256), "traced": [[3, []]]}, "did not run the traced programs"),
    ({"loops": False, "programs": []}, "traced programs ran loops"),
])
def test_a_malformed_or_short_census_is_refused(record, text):
    with pytest.raises(CensusError, match=text):
        judge_census(record, 300, 4, traced_work=2.0)


def test_a_grid_the_trace_ran_whole_needs_no_census():
    assert census_pids(4, 4, random.Random(0)) == []
    assert census_pids(100, 4, random.Random(0)) == list(range(100))
    picks = census_pids(10_000, 4, random.Random(0))
    assert len(picks) == len(set(picks)) == CENSUS_PROGRAMS
    assert judge_census({"loops": True, "programs": []}, 4, 4, traced_work=1.0).scale == 1.0
    assert census_pids(10_000, 4, random.Random(0), loops=False) == []
    assert judge_census({"loops": False, "programs": []}, 10_000, 4, traced_work=1.0).programs == 0


def test_kernels_without_loops_need_no_census():
    assert not kernels_have_loops((KERNELS / "vector_add.py").read_text())
    assert kernels_have_loops((KERNELS / "row_sums.py").read_text())
    host_loop = "import triton\n@triton.jit\ndef k(x):\n    pass\ndef launch(x):\n    for i in range(2):\n        k[(1,)](x)\n"
    assert not kernels_have_loops(host_loop)
    assert kernels_have_loops("def launch(x):\n    return x\n")      # no kernel found: cannot tell
    assert kernels_have_loops("def (")


def _total_load_bytes(kernel: str, seed: int):
    gate, (trace,) = trace_trusted((KERNELS / kernel).read_text(), SUMS, [{"BLOCK": BLOCK}], seed=seed,
                                   trace_programs=4, timeout=120.0)
    assert gate.passed, gate.reason
    (launch,) = trace.launches
    return launch, launch.traffic["x_ptr"].load_bytes * launch.num_programs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_work_left_to_rare_programs_is_counted(seed):
    launch, total = _total_load_bytes("rare_heavy_programs.py", seed)
    # the traced programs are light; the census finds the heavy ones (about 4 of its 256)
    assert launch.num_programs == 640 and launch.census_programs == CENSUS_PROGRAMS
    assert launch.census_scale > 1.3 and total >= 0.7 * ROWS * ROW_BYTES
    assert launch.max_loop_trips >= 40 * BLOCKS and launch.program_bytes_spread > 10


def test_an_honest_grid_is_unchanged_by_the_census():
    launch, total = _total_load_bytes("row_sums.py", 0)
    assert launch.census_programs == CENSUS_PROGRAMS and launch.census_scale == 1.0
    assert total == pytest.approx(ROWS * ROW_BYTES) and launch.program_bytes_spread == pytest.approx(1.0)


def test_a_program_that_fails_only_with_its_loops_cut_keeps_what_it_planned_until_then():
    launch, total = _total_load_bytes("row_sums_last_index.py", 0)
    assert launch.census_programs == CENSUS_PROGRAMS and launch.census_scale == 1.0
    assert total == pytest.approx(ROWS * ROW_BYTES)


def test_edge_tiles_in_the_sample_do_not_fail_an_honest_gemm_on_output_coverage():
    """256x128 tiles at 784 x 904: the last column of tiles stores 8 of 128 columns.  A trace whose random
    picks are edge tiles extrapolated 87% of the output's bytes (below the 90% the coverage check
    asks); the census's programs, run alike, correct the estimate to what the grid writes."""
    from kernelfoundry.evaluate.judge.plausibility import implausible_traces, output_sizes
    from kernelfoundry.evaluate.trace.counts import stored_output_bytes
    root = Path(__file__).resolve().parents[2]
    seed_file = root / "experiments" / "tasks" / "kernels" / "matmul_naive.py"
    source = seed_file.read_text().replace(
        'PARAMS = {"BLOCK_M": [16, 32], "BLOCK_N": [16, 32], "BLOCK_K": [16], "num_warps": [4], "num_stages": [1]}',
        'PARAMS = {"BLOCK_M": [256], "BLOCK_N": [128], "BLOCK_K": [64], "num_warps": [8], "num_stages": [3]}')
    assert "[256]" in source
    task = task_from_dict({
        "name": "edge_tiles", "reference": "import torch\ndef reference(a, b):\n    return a @ b\n",
        "inputs": {"a": {"shape": ["M", "K"], "dtype": "float16"}, "b": {"shape": ["K", "N"], "dtype": "float16"}},
        "shapes": {"check": [{"M": 40, "N": 24, "K": 136}], "target": [{"M": 784, "N": 904, "K": 64}]},
        "tolerance": {"atol": 2e-2, "rtol": 2e-2}, "seeds": [str(seed_file)]})
    gate, traces = trace_trusted(source, task, seed=1)
    assert gate.passed, gate.reason
    launch = traces[0].launches[0]
    out = launch.traffic["c_ptr"]
    need = output_sizes(task, traces[0].shape)[0]
    # the sample alone extrapolated 87% of the output's bytes; the census (all 32 programs) corrects the
    # model's store traffic and the coverage estimate to what the grid writes
    assert launch.census_programs == launch.num_programs == 32
    assert out.store_bytes * launch.num_programs == pytest.approx(need, rel=0.03)
    assert stored_output_bytes(traces[0])["output:0"] == pytest.approx(need, rel=0.03)
    assert implausible_traces(task, traces) is None


def test_census_factors_correct_an_unlucky_sample_but_not_a_grid_that_writes_little():
    full, edge, idle = np.array([[0.0, 8.0]]), np.array([[0.0, 0.5]]), np.array([[0.0, 0.0]])
    # a grid of full tiles and 1 in 10 edge tiles, sampled on two edges: corrected to the grid's mean
    census_io = [edge if i % 10 == 0 else full for i in range(100)]
    weights = [0.01, 0.49, 0.49, 0.01]
    expected = (0.1 * 0.5 + 0.9 * 8) / (0.02 * 8 + 0.98 * 0.5)
    assert coverage_factors(census_io, [full, edge, edge, full], weights)[0][1] == pytest.approx(expected)
    traffic = traffic_factors(census_io, [full, edge, edge, full], weights, scale=1.0)
    assert traffic[0][1] == pytest.approx(expected)
    # what the traffic factor (or the planned-trips scale) already corrected, coverage does not again
    assert coverage_factors(census_io, [full, edge, edge, full], weights, traffic) == {}
    assert traffic_factors(census_io, [full, edge, edge, full], weights, scale=expected) == {}
    # half the grid idle (a kernel that writes half its output at the target): the census sees it too
    census_io = [idle if i % 2 else full for i in range(100)]
    assert coverage_factors(census_io, [full, idle, full, idle], weights) == {}
    assert coverage_factors([], [full], [1.0]) == {}


def test_one_program_in_64_reading_sixteen_times_as_much_is_found_in_its_planned_bytes():
    """Wider trips (or straight-line loads) in rare programs plan no more trips, so the trip census
    missed them; their planned bytes show it and the tensor's counts are scaled to the grid's mean."""
    light = ([_loop(8)], [[0, 0]], [[0, 1, 1024, 0], [1, 0, 0, 64]])       # 8 trips of 1 KB, one 64 B store
    heavy = ([_loop(8)], [[0, 0]], [[0, 1, 16384, 0], [1, 0, 0, 64]])
    programs = [[pid, *(heavy if pid % 64 == 7 else light)] for pid in range(256)]
    traced = [[pid, *light] for pid in (0, 100, 200, 255)]
    census = judge_census({"loops": True, "programs": programs, "traced": traced}, 10_000, 4, 9.0,
                          [0, 100, 200, 255], [0.25] * 4, 2)
    assert census.scale == 1.0                                            # the same planned trips
    assert census.traffic[0][0] == pytest.approx((4 * 16384 + 252 * 1024) / 256 / 1024)
    assert 1 not in census.traffic                                        # the output: as traced


def test_a_sampled_census_charges_its_upper_confidence_bound():
    """One heavy program in 64 (40x the work): a census of 256 that met only 2 of them (a quarter of
    draws meet 2 or fewer) stood for 1.30x the light work, below the grid's 1.61x; its upper bound does not."""
    works = [40 if i in (7, 200) else 1 for i in range(256)]
    census = judge_census(_record(works), 10_000, 4, traced_work=1.0)
    assert census.scale >= (63 + 40) / 64
    # programs of equal work have no spread: the bound is the mean
    assert judge_census(_record([5] * 256), 10_000, 4, traced_work=5.0).scale == 1.0
