"""Sector runs: the child's compact record of what an access touched, and the judge's distinct count."""

import numpy as np
import pytest

from kernelfoundry.evaluate.sector_runs import expand, new_per_row, to_runs, valid_rows


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
    new, distinct = new_per_row(runs)
    want_new, want_distinct = _distinct_by_sets(rows)
    assert new.tolist() == want_new and distinct.tolist() == want_distinct


def test_a_16mb_row_read_three_times_counts_its_sectors_once():
    row = to_runs(np.arange(16 * 2**20 // 32))        # 512K sectors, one run
    blocks = [row] * 3
    new, distinct = new_per_row(blocks)
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
