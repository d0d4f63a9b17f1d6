"""Sectors as runs: what one memory access touched, and which of it a program had not touched before.

The trace child records each access's distinct 32-byte sectors as runs ``(start, length)`` of
consecutive sectors: a coalesced block load of a whole row is one run however long the row, so a
dense run can record every trip of a kernel that streams 16 MB rows several times (as single
sectors it could not).  The judge counts, per access row, the sectors no earlier row of the same
program touched (distinct bytes), vectorized over all rows at once.

Past its budget of exact runs a dense run records *coarse* runs: the 2**shift-sector blocks an
access touched, merged where consecutive, with the exact sector count kept beside them.  Coarse
runs cover every sector the access touched, so the distinct count they give is an upper bound
(an access that touches every other sector, one run per sector, becomes one run).  The judge's
work is bounded by the record's size, not by the sectors it claims: runs that would expand to
more than :data:`EXPAND_LIMIT` sectors are counted in blocks of 2**k sectors (an upper bound too).
"""

from __future__ import annotations

import numpy as np

_EMPTY = np.zeros((0, 2), dtype=np.int64)
#: No run may end past this sector (2**48 sectors: 8 PB), so sums of runs cannot overflow.
MAX_SECTOR = 1 << 48


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``: the sorted distinct values of an int array.  A block access's sectors are
    usually in order already (a row, or rows of a tile); those skip the sort (about 8x faster)."""
    v = values.reshape(-1)
    if v.size < 2:
        return v.copy()
    step = v[1:] >= v[:-1]
    if not step.all():
        return np.unique(v)
    keep = np.empty(v.size, dtype=bool)
    keep[0] = True
    np.not_equal(v[1:], v[:-1], out=keep[1:])
    return v[keep]


def to_runs(sectors: np.ndarray) -> np.ndarray:
    """``[k, 2]`` int64 runs ``(start, length)`` of a sorted array of distinct sectors."""
    if sectors.size == 0:
        return _EMPTY
    breaks = np.flatnonzero(np.diff(sectors) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [sectors.size]))
    return np.stack((sectors[starts], ends - starts), axis=1).astype(np.int64, copy=False)


def coarse_runs(sectors: np.ndarray, shift: int) -> np.ndarray:
    """Runs of the 2**shift-sector blocks that a sorted array of distinct sectors touches, in sectors
    (``shift`` 0: exact runs)."""
    if shift <= 0 or sectors.size == 0:
        return to_runs(sectors)
    blocks = sectors >> shift
    blocks = blocks[np.concatenate(([True], np.diff(blocks) != 0))]
    return to_runs(blocks) << shift


def valid_rows(runs: np.ndarray, row_runs: np.ndarray) -> bool:
    """Whether *runs* (``[R, 2]``) split into rows of *row_runs* runs each are well formed: lengths of
    at least one, starts not negative, nothing past :data:`MAX_SECTOR`, and each row's runs ascending without overlap or contact."""
    if runs.ndim != 2 or runs.shape[1] != 2 or int(row_runs.sum()) != runs.shape[0]:
        return False
    if runs.shape[0] == 0:
        return True
    starts, lengths = runs[:, 0], runs[:, 1]
    if lengths.min() < 1 or starts.min() < 0 or starts.max() > MAX_SECTOR or lengths.max() > MAX_SECTOR:
        return False
    row_of = np.repeat(np.arange(row_runs.size), row_runs)
    same_row = row_of[1:] == row_of[:-1]
    return bool(np.all(starts[1:][same_row] > (starts[:-1] + lengths[:-1])[same_row]))


#: The judge expands at most this many sectors (or blocks) per tensor and access kind; runs that
#: would expand to more are counted in larger blocks (32 MB of int64 at most).
EXPAND_LIMIT = 1 << 22


def _block_lengths(runs: np.ndarray, shift: int) -> np.ndarray:
    """How many 2**shift-sector blocks each run touches."""
    return ((runs[:, 0] + runs[:, 1] - 1) >> shift) - (runs[:, 0] >> shift) + 1


def expand(runs: np.ndarray, shift: int = 0) -> np.ndarray:
    """Every 2**shift-sector block that *runs* touch, in order (``shift`` 0: every sector); a block two
    runs share appears twice."""
    if runs.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    lengths = _block_lengths(runs, shift)
    offsets = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(runs[:, 0] >> shift, lengths) + offsets


def expand_shift(runs: np.ndarray, limit: int = EXPAND_LIMIT) -> int:
    """The smallest block shift at which *runs* expand to at most *limit* blocks (or two per run)."""
    for shift in range(63):
        if int(_block_lengths(runs, shift).sum()) <= max(limit, 2 * runs.shape[0]):
            return shift
    return 63


def new_per_row(runs: list[np.ndarray], limit: int = EXPAND_LIMIT) -> tuple[np.ndarray, np.ndarray, int]:
    """For rows of runs in program order: how many sectors each row touched that no earlier row did,
    the sorted distinct blocks of all rows and their shift (blocks of 2**shift sectors: 0 while the
    rows expand to at most *limit* sectors; above, the counts are an upper bound in whole blocks)."""
    if not runs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 0
    joined = np.concatenate(runs)
    if joined.shape[0] == 0:
        return np.zeros(len(runs), dtype=np.int64), np.zeros(0, dtype=np.int64), 0
    shift = expand_shift(joined, limit)
    run_row = np.repeat(np.arange(len(runs)), [r.shape[0] for r in runs])
    row_blocks = np.bincount(run_row, weights=_block_lengths(joined, shift), minlength=len(runs)).astype(np.int64)
    distinct, first = np.unique(expand(joined, shift), return_index=True)
    row_of = np.repeat(np.arange(len(runs)), row_blocks)
    return np.bincount(row_of[first], minlength=len(runs)) << shift, distinct, shift
