"""Sector runs: the child's compact record of what an access touched, and the judge's distinct count."""

import numpy as np
import pytest

from kernelfoundry.evaluate.child.record_trace import OFF_PLAN_RUNS, coarse_shift
from kernelfoundry.evaluate.trace.sector_runs import coarse_runs, distinct, expand, new_per_row, to_runs, valid_rows


def _distinct_by_sets(rows):
    seen, out = set(), []
    for sectors in rows:
        before = len(seen)
        seen.update(sectors.tolist())
        out.append(len(seen) - before)
    return out, sorted(seen)


def test_a_contiguous_block_is_one_run_and_gaps_split_it():
    assert to_runs(np.arange(100, 612)).tolist() == [[100, 512]]
    assert to_runs(np.array([0, 1, 2, 5, 7, 8])).tolist() == [[0, 3], [5, 1], [7, 2]]
    assert to_runs(np.zeros(0, dtype=np.int64)).shape == (0, 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_runs_round_trip_and_count_new_sectors_like_a_set(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(40):      # overlapping blocks, strided gathers, repeats of earlier rows
        if rng.random() < 0.4:
            start = int(rng.integers(0, 3000))
            rows.append(np.arange(start, start + int(rng.integers(1, 600))))
        elif rng.random() < 0.5:
            rows.append(np.unique(rng.integers(0, 4000, size=int(rng.integers(1, 200)))))
        else:
            rows.append(rows[int(rng.integers(0, len(rows)))] if rows else np.arange(5))
    runs = [to_runs(r) for r in rows]
    for r, rr in zip(rows, runs):
        assert np.array_equal(expand(rr), r)
    new, distinct, shift = new_per_row(runs)
    want_new, want_distinct = _distinct_by_sets(rows)
    assert shift == 0 and new.tolist() == want_new and distinct.tolist() == want_distinct


def test_a_16mb_row_read_three_times_counts_its_sectors_once():
    row = to_runs(np.arange(16 * 2**20 // 32))        # 512K sectors, one run
    blocks = [row] * 3
    new, distinct, _ = new_per_row(blocks)
    assert new.tolist() == [2**19, 0, 0] and distinct.size == 2**19


@pytest.mark.parametrize("runs, per_row, ok", [
    ([[0, 4], [10, 2]], [2], True),
    ([[0, 4], [4, 2]], [2], False),          # touching runs in one row: not a canonical record
    ([[10, 2], [0, 4]], [2], False),         # descending
    ([[0, 4], [2, 4]], [1, 1], True),        # overlap across rows is what distinct counting is for
    ([[0, 0]], [1], False),                  # empty run
    ([[-3, 2]], [1], False),                 # before the tensor
    ([[0, 4]], [2], False),                  # counts do not add up
])
def test_malformed_runs_are_refused(runs, per_row, ok):
    assert valid_rows(np.array(runs, dtype=np.int64).reshape(-1, 2), np.array(per_row)) is ok


def test_runs_of_the_wrong_shape_are_refused():
    assert not valid_rows(np.arange(6, dtype=np.int64), np.array([3]))


def test_interleaved_halves_are_one_coarse_run_each_and_count_the_window_once():
    """Two accesses that each touch every other sector of a window: exact, one run per sector; coarse
    (blocks of 4 sectors), one run each, and the pair counts the window once (not twice, not half)."""
    window = np.arange(0, 4096)
    even, odd = window[window % 2 == 0], window[window % 2 == 1]
    assert to_runs(even).shape[0] == 2048
    runs = [coarse_runs(even, 2), coarse_runs(odd, 2)]
    assert [r.tolist() for r in runs] == [[[0, 4096]], [[0, 4096]]]
    new, _, _ = new_per_row(runs)
    assert new.tolist() == [4096, 0]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("shift", [1, 3, 6])
def test_coarse_runs_cover_every_sector_so_distinct_counts_are_upper_bounds(seed, shift):
    rng = np.random.default_rng(seed)
    rows = [np.unique(rng.integers(0, 50_000, size=int(rng.integers(1, 400)))) for _ in range(30)]
    coarse = [coarse_runs(r, shift) for r in rows]
    for r, c in zip(rows, coarse):
        covered = expand(c)
        assert np.isin(r, covered).all() and c[:, 0].min() % (1 << shift) == 0
        assert valid_rows(c, np.array([c.shape[0]]))
    new, _, _ = new_per_row(coarse)
    exact, _ = _distinct_by_sets(rows)
    assert new.sum() >= sum(exact) and new.sum() <= sum(exact) << shift


def test_past_the_expand_limit_counts_are_whole_blocks_and_never_below_the_truth():
    rng = np.random.default_rng(3)
    rows = [np.unique(rng.integers(0, 1 << 20, size=5000)) for _ in range(8)] + [np.arange(1 << 18)]
    runs = [to_runs(r) for r in rows]
    exact_new, exact_distinct, shift0 = new_per_row(runs)
    new, distinct, shift = new_per_row(runs, limit=4096)
    assert shift0 == 0 and shift > 0
    assert new.sum() >= exact_new.sum() and distinct.size <= 4096 + 2 * sum(r.shape[0] for r in runs)
    # a huge run claimed by a hostile record costs the judge its block count, not its sectors
    new, distinct, shift = new_per_row([np.array([[0, 1 << 40]]), np.array([[5, 1 << 39]])], limit=1024)
    assert new.tolist()[1] == 0 and new[0] >= 1 << 40 and distinct.size <= 1024


def test_runs_past_the_sector_limit_are_refused():
    assert not valid_rows(np.array([[1 << 50, 4]]), np.array([1]))
    assert not valid_rows(np.array([[0, 1 << 50]]), np.array([1]))


def test_the_block_grows_as_a_dense_run_records_more_runs_past_its_budget():
    shifts = [coarse_shift(n) for n in (0, OFF_PLAN_RUNS - 1, OFF_PLAN_RUNS, OFF_PLAN_RUNS + (1 << 17),
                                        OFF_PLAN_RUNS + (1 << 20), 1 << 40)]
    assert shifts[:2] == [0, 0] and shifts[2] == 2 and shifts[3] == 4
    assert shifts == sorted(shifts) and shifts[-1] == 62


@pytest.mark.parametrize("seed", range(6))
def test_distinct_is_np_unique_for_ordered_and_unordered_sectors(seed):
    rng = np.random.default_rng(seed)
    row = (np.arange(4096) * 4) >> 5                                      # a row: in order, repeats
    tile = ((np.arange(32)[:, None] * 1024 + np.arange(64)[None, :]) * 2) >> 5    # rows of a tile
    column = ((np.arange(64)[None, :] * 1024 + np.arange(32)[:, None]) * 4).reshape(-1) >> 5   # transposed
    for values in (row, tile.reshape(-1), column, rng.integers(0, 500, 3000), rng.integers(0, 5, 1),
                   np.zeros(0, dtype=np.int64), np.full(7, 3), np.sort(rng.integers(0, 50, 200))[::-1].copy()):
        got = distinct(values)
        assert got.dtype == np.unique(values).dtype and np.array_equal(got, np.unique(values))
