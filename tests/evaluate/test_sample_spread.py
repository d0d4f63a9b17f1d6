"""The upper bound a lift uses for densely sampled long loops (sample_spread)."""

import numpy as np
import pytest

from kernelfoundry.evaluate.trace.sample_spread import GROUPS, sample_groups, upper_margin
from kernelfoundry.evaluate.trace.trip_witness import parse_loops


def long_loop(n: int, plan: list[int], inner: int = 0):
    """A loop of *n* trips that ran *plan*, with an inner loop of *inner* trips in every trip run."""
    execs = [["k:1", "for", n, 0, plan, []]]
    trips = []
    for index in plan:
        trips.append([0, index])
        if inner:
            parent = len(trips)
            execs.append(["k:2", "for", inner, parent, list(range(inner)), []])
            trips.extend([len(execs) - 1, j] for j in range(inner))
    return parse_loops(execs, trips)


def test_middle_samples_are_dealt_into_groups_and_nested_trips_follow():
    plan = [0, 1] + list(range(2, 2000, 2)) + [1999]            # a dense sample of a 2,000-trip loop
    labels, sizes = sample_groups(*long_loop(2000, plan, inner=2))
    assert sizes[0] == 0 and sizes[1:].sum() == len(plan) - 3      # head, witness and tail stay out
    assert sizes[1:].max() - sizes[1:].min() <= 1
    loops, trips = long_loop(2000, plan, inner=2)
    for t, (e, _) in enumerate(trips, start=1):
        if loops[e][0] == "k:2":
            assert labels[t] == labels[loops[e][3]]               # inner trips join their parent's group


def test_loops_run_in_full_or_sparsely_are_not_grouped():
    _, sizes = sample_groups(*long_loop(500, list(range(500))))
    assert sizes.sum() == 0
    _, sizes = sample_groups(*long_loop(500, [0, 1, 100, 200, 300, 499]))
    assert sizes.sum() == 0


def test_margin_is_zero_for_equal_groups_and_grows_with_rare_work():
    sizes = np.array([0.0] + [128.0] * GROUPS)
    equal = np.array([[0.0]] + [[128.0]] * GROUPS)
    assert upper_margin(equal, sizes)[0] == 0.0
    rare = np.array([[0.0], [0.0], [64.0], [0.0], [32.0], [0.0], [96.0], [0.0], [64.0]])
    margin = upper_margin(rare, sizes)[0]
    estimates = rare[1:, 0] * GROUPS
    assert margin == pytest.approx(2.0 * estimates.std(ddof=1) / np.sqrt(GROUPS))
    assert margin > 0.5 * rare.sum()          # work on 1 trip in 32: the bound is well above the estimate
