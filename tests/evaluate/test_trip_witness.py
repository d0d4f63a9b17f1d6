"""Loop trip weights: the witness trip stands in for middle samples that do less than it."""

import numpy as np
import pytest

from kernelfoundry.evaluate.trace.trip_witness import LIGHTER, WORK_KINDS, WitnessError, trip_weights

LOAD = WORK_KINDS.index("load")
DOT = WORK_KINDS.index("dot")


def one_loop(n: int, plan: list[int], work: list[float], kind: int = LOAD):
    """execs/trips/own-work of a single top-level loop with per-trip work along *plan*."""
    execs = [["k:10", "for", n, 0, plan, []]]
    trips = [[0, i] for i in plan]
    own = np.zeros((len(plan) + 1, len(WORK_KINDS)))
    own[1:, kind] = work
    return execs, trips, own


def total(weights, own):
    return float(np.dot(weights, own.sum(axis=1)))


def test_uniform_trips_keep_the_sampling_weights():
    plan = [0, 1, 40, 70, 90, 127]
    execs, trips, own = one_loop(128, plan, [1.0] * 6)
    seen = []
    weights, loop_trips = trip_weights(execs, trips, own, on_witness=seen.append)
    assert weights[1:3] == [1.0, 1.0] and weights[-1] == 1.0
    assert weights[3:6] == pytest.approx([125 / 3] * 3)
    assert total(weights, own) == pytest.approx(128.0) and loop_trips == 128 and seen == []


def test_middle_samples_lighter_than_the_witness_are_replaced_by_it():
    # a kernel that notices the jump to a sampled middle trip and loads nothing there
    plan = [0, 1, 40, 70, 90, 127]
    execs, trips, own = one_loop(128, plan, [1.0, 1.0, 0.0, 0.0, 0.0, 1.0])
    seen = []
    weights, _ = trip_weights(execs, trips, own, on_witness=seen.append)
    assert seen == ["k:10"]
    assert weights[2] == pytest.approx(126.0) and weights[3:6] == [0.0, 0.0, 0.0]
    assert total(weights, own) == pytest.approx(128.0), "scored as if every trip did the witness's work"


def test_a_slightly_lighter_middle_is_sampling_noise_not_a_cheat():
    plan = [0, 1, 40, 70, 90, 127]
    light = LIGHTER + 0.02
    execs, trips, own = one_loop(128, plan, [1.0, 1.0, light, light, light, 1.0])
    seen = []
    trip_weights(execs, trips, own, on_witness=seen.append)
    assert seen == []


def test_heavier_middle_samples_keep_their_weight():
    plan = [0, 1, 40, 70, 90, 127]
    execs, trips, own = one_loop(128, plan, [1.0, 1.0, 3.0, 3.0, 3.0, 1.0], kind=DOT)
    weights, _ = trip_weights(execs, trips, own)
    assert weights[3] == pytest.approx(125 / 3)


def test_nested_work_counts_for_the_outer_trip():
    # outer loop of 64 trips; the middle outer trips run an inner loop of 0 trips, the witness one of 4
    outer_plan = [0, 1, 20, 30, 40, 63]
    execs = [["k:5", "for", 64, 0, outer_plan, []]]
    trips = []
    own_rows = [np.zeros(len(WORK_KINDS))]
    for index in outer_plan:
        trips.append([0, index])
        own_rows.append(np.zeros(len(WORK_KINDS)))
        parent = len(trips)
        inner = 4 if index in (0, 1, 63) else 0
        execs.append(["k:7", "for", inner, parent, list(range(inner)), []])
        for j in range(inner):
            trips.append([len(execs) - 1, j])
            row = np.zeros(len(WORK_KINDS))
            row[LOAD] = 1.0
            own_rows.append(row)
    own = np.stack(own_rows)
    seen = []
    weights, _ = trip_weights(execs, trips, own, on_witness=seen.append)
    assert seen == ["k:5"], "an outer trip whose nested loop was skipped is lighter than the witness"
    assert total(weights, own) == pytest.approx(64 * 4.0)


def test_malformed_loop_records_are_refused():
    execs, trips, own = one_loop(128, [0, 1, 40, 70, 90, 127], [1.0] * 6)
    with pytest.raises(WitnessError):
        trip_weights(execs, [[0, 5]] + trips[1:], own)           # trip 5 is not in the plan
    with pytest.raises(WitnessError):
        trip_weights([["k:1", "for", 4, 3, [0, 1, 2, 3], []]], [[0, 0]], np.zeros((2, len(WORK_KINDS))))
    with pytest.raises(WitnessError):
        trip_weights(execs, trips, own[:-1])
    with pytest.raises(WitnessError):       # a dense record's sparse plan must be a sampled plan inside its trips
        trip_weights([["k:1", "for", 64, 0, list(range(64)), [0, 1, 99, 98, 97, 63]]],
                     [[0, i] for i in range(64)], np.zeros((65, len(WORK_KINDS))))


def dense_loop(work_of):
    """A dense program's loop of 64 trips (every trip run) with its sparse plan, and per-trip work."""
    sparse = [0, 1, 20, 30, 40, 63]
    execs = [["k:10", "for", 64, 0, list(range(64)), sparse]]
    trips = [[0, i] for i in range(64)]
    own = np.zeros((65, len(WORK_KINDS)))
    own[1:, DOT] = [work_of(i) for i in range(64)]
    return execs, trips, own


def test_a_dense_loop_counts_every_trip_and_its_sparse_view_only_the_sampled_ones():
    execs, trips, own = dense_loop(lambda i: 4.0 if i % 16 == 7 else 1.0)      # rare heavy trips
    weights, loop_trips = trip_weights(execs, trips, own)
    assert weights[1:] == [1.0] * 64 and loop_trips == 64
    assert total(weights, own) == pytest.approx(60 + 4 * 4.0)                   # the real work
    sparse_weights, _ = trip_weights(execs, trips, own, sparse_view=True)
    assert [t for t in range(1, 65) if sparse_weights[t] > 0] == [1, 2, 21, 31, 41, 64]
    assert total(sparse_weights, own) == pytest.approx(64.0)     # what the sampled programs estimate
