"""How far a dense program's count of a long loop can be off: an upper bound for the lift.

A dense program runs every trip of a loop of up to ``loop_hooks.DENSE_TRIPS`` trips; beyond,
it runs a random sample of that many and weights the middle samples to stand for all middle
trips.  Work that sits on rare trips is then an *estimate*, and a search that tries many
configs finds the ones whose estimate came out low.  So the count a lift uses is an upper
confidence bound: the middle samples of every such loop are dealt round-robin into
:data:`GROUPS` groups (a trip nested inside a sampled middle trip joins its group), each
group's work scaled to stand for all of them is one estimate, and the bound adds
:data:`Z` standard errors of their mean.  Loops whose trips do equal work have groups that
agree: the bound is the count.
"""

from __future__ import annotations

import numpy as np

from .trip_witness import HEAD, MIDDLE, TAIL

#: Groups the middle samples of a densely sampled loop are dealt into.
GROUPS = 8
#: Standard errors added to the estimate (one-sided, about 98% for a normal estimate).
Z = 2.0


def sample_groups(loops: list[tuple], trip_list: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Group label per trip id (0: in no sampled middle) and the number of middle trips per label.

    *loops* and *trip_list* are ``trip_witness.parse_loops``'s output.  Only loop executions that
    ran a sample of at least ``GROUPS`` middle trips beyond the sparse plan (densely sampled loops)
    are grouped; a trip inside a grouped trip inherits its label."""
    labels = np.zeros(len(trip_list) + 1, dtype=np.int64)
    sizes = np.zeros(GROUPS + 1)
    dealt = [0] * len(loops)
    for t, (e, index) in enumerate(trip_list, start=1):
        _, _, n, parent, plan, _ = loops[e]
        if labels[parent]:
            labels[t] = labels[parent]
        elif len(plan) < n and len(plan) >= HEAD + MIDDLE + TAIL + GROUPS and HEAD <= index < n - TAIL:
            labels[t] = 1 + dealt[e] % GROUPS
            dealt[e] += 1
            sizes[labels[t]] += 1
    return labels, sizes


def upper_margin(by_label: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``Z`` standard errors of the sampled part of a count, from its totals per label.

    *by_label* is ``[GROUPS + 1, ...]`` (row 0: work outside sampled middles, ignored)."""
    filled = sizes[1:] > 0
    if filled.sum() < 2:
        return np.zeros(by_label.shape[1:])
    per_group = by_label[1:][filled]
    share = sizes[1:][filled] / sizes[1:][filled].sum()
    estimates = per_group / share.reshape((-1,) + (1,) * (per_group.ndim - 1))
    g = len(estimates)
    return Z * np.sqrt(estimates.var(axis=0, ddof=1) / g)
