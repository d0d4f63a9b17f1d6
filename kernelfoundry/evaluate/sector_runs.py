"""Sectors as runs: what one memory access touched, and which of it a program had not touched before.

The trace child records each access's distinct 32-byte sectors as runs ``(start, length)`` of
consecutive sectors: a coalesced block load of a whole row is one run however long the row, so a
dense run can record every trip of a kernel that streams 16 MB rows several times (as single
sectors it could not).  The judge counts, per access row, the sectors no earlier row of the same
program touched (distinct bytes), vectorized over all rows at once.
"""

from __future__ import annotations

import numpy as np

_EMPTY = np.zeros((0, 2), dtype=np.int64)


def to_runs(sectors: np.ndarray) -> np.ndarray:
    """``[k, 2]`` int64 runs ``(start, length)`` of a sorted array of distinct sectors."""
    if sectors.size == 0:
        return _EMPTY
    breaks = np.flatnonzero(np.diff(sectors) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [sectors.size]))
    return np.stack((sectors[starts], ends - starts), axis=1).astype(np.int64, copy=False)


def valid_rows(runs: np.ndarray, row_runs: np.ndarray) -> bool:
    """Whether *runs* (``[R, 2]``) split into rows of *row_runs* runs each are well formed: lengths of
    at least one, starts not negative, and each row's runs ascending without overlap or contact."""
    if runs.ndim != 2 or runs.shape[1] != 2 or int(row_runs.sum()) != runs.shape[0]:
        return False
    if runs.shape[0] == 0:
        return True
    starts, lengths = runs[:, 0], runs[:, 1]
    if lengths.min() < 1 or starts.min() < 0:
        return False
    row_of = np.repeat(np.arange(row_runs.size), row_runs)
    same_row = row_of[1:] == row_of[:-1]
    return bool(np.all(starts[1:][same_row] > (starts[:-1] + lengths[:-1])[same_row]))


def expand(runs: np.ndarray) -> np.ndarray:
    """Every sector of *runs*, in order."""
    if runs.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    lengths = runs[:, 1]
    offsets = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(runs[:, 0], lengths) + offsets


def new_per_row(runs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """For rows of runs in program order: how many sectors each row touched that no earlier row did,
    and the sorted distinct sectors of all rows."""
    if not runs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    counts = np.array([int(r[:, 1].sum()) for r in runs], dtype=np.int64)
    sectors = expand(np.concatenate(runs))
    distinct, first = np.unique(sectors, return_index=True)
    row_of = np.repeat(np.arange(len(runs)), counts)
    return np.bincount(row_of[first], minlength=len(runs)), distinct
