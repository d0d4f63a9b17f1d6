"""Loop trip weights for the judge, with a witness trip that the loop sampling cannot fool.

The trace runs trips ``0`` and ``1`` of a long ``for`` loop, three seeded-random
middle trips and the last (:func:`loop_hooks.trip_plan`); the middle samples stand
for the ``n - 3`` middle trips.  A kernel can notice that a middle trip did not
follow its predecessor (the loop variable jumped, a carried counter disagrees) and
do less there: on a GPU, and in every correctness run, no trip ever jumps.  Trip
``1`` cannot be told apart from a full run: it follows trip ``0`` as always.  So
trip 1 is the *witness*: when the middle samples did less of any kind of work
(loads, stores, atomics, dot flops, elementwise, transcendental or reduction
elements, nested loops included) than the witness by more than :data:`LIGHTER`,
the middle trips are estimated from the witness instead.  An honest loop whose
trips do equal work is unaffected; one whose later trips legitimately do less
(a mask that empties past a diagonal) is scored at its witness's work, an
over-estimate that never favours the kernel.

A loop execution of the launch's dense program (``loop_hooks``) also carries the
sparse plan the other programs ran; ``sparse_view=True`` weighs only those trips, as
if the dense program had been sampled like the others (the judge compares the two).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .loop_plan import HEAD, MIDDLE, TAIL, trip_weight

#: Work kinds compared per trip: access elements by kind (load, store, atomic), dot flops, op elements
#: by kind (elementwise, transcendental, reduction).
WORK_KINDS = ("load", "store", "atomic", "dot", "elementwise", "transcendental", "reduction")
#: The middle samples may do this fraction of the witness's work (of each kind) before it stands in.
LIGHTER = 0.9


class WitnessError(ValueError):
    """The loop records do not hold together."""


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise WitnessError(what)


def parse_loops(execs: list[Any], trips: list[Any]) -> tuple[list[tuple], list[tuple[int, int]]]:
    """Validated ``(loop, kind, n, parent, plan, sparse)`` execs and ``(exec index, trip index)`` per trip
    id 1..T (*sparse*: the dense program's record of the plan the other programs ran, else empty)."""
    parsed_execs = []
    for item in execs:
        _require(isinstance(item, list) and len(item) == 6, "a loop record is malformed")
        loop, kind, n, parent, plan, sparse = item
        _require(kind in ("for", "while") and isinstance(n, int) and n >= 0 and isinstance(parent, int)
                 and parent >= 0 and isinstance(plan, list) and isinstance(sparse, list), "a loop record is malformed")
        _require(not sparse or (len(sparse) == HEAD + MIDDLE + TAIL < n and set(sparse) <= set(plan)),
                 "a dense loop record is malformed")
        parsed_execs.append((str(loop), kind, n, parent, plan, sparse))
    parsed_trips = []
    for t, item in enumerate(trips, start=1):
        _require(isinstance(item, list) and len(item) == 2, f"trip {t} is malformed")
        exec_index, index = item
        _require(isinstance(exec_index, int) and 0 <= exec_index < len(parsed_execs), f"trip {t} names no loop")
        _, _, n, parent, plan, _ = parsed_execs[exec_index]
        _require(parent < t, f"trip {t} has a later parent")
        _require(isinstance(index, int) and index in plan and 0 <= index < n, f"trip {t} is not in its loop's plan")
        parsed_trips.append((exec_index, index))
    for _, _, _, parent, _, _ in parsed_execs:
        _require(parent <= len(parsed_trips), "a loop record is malformed")
    return parsed_execs, parsed_trips


def _sampled(n: int, plan: list[int]) -> bool:
    return n > HEAD + MIDDLE + TAIL and len(plan) < n


def trip_weights(execs: list[Any], trips: list[Any], own_work: np.ndarray,
                 on_witness: Callable[[str], None] | None = None,
                 sparse_view: bool = False) -> tuple[list[float], float]:
    """Weight of every trip id (0: outside loops) and the program's total loop trips.

    *own_work* is ``[T + 1, len(WORK_KINDS)]``: the work recorded directly in each trip
    (nested loops excluded).  *on_witness(loop)* is called for each loop execution whose
    middle samples were replaced by its witness.  *sparse_view*: dense loop executions
    count only the trips of their sparse plan (the others weigh 0).
    """
    loops, trip_list = parse_loops(execs, trips)
    n_trips = len(trip_list)
    _require(own_work.shape[0] == n_trips + 1, "the per-trip work does not match the trips")
    trips_of: list[list[int]] = [[] for _ in loops]
    for t, (e, _) in enumerate(trip_list, start=1):
        trips_of[e].append(t)
    children: list[list[int]] = [[] for _ in range(n_trips + 1)]      # trip id -> loop executions inside it
    for e, (_, _, _, parent, _, _) in enumerate(loops):
        children[parent].append(e)
    rel = np.ones(n_trips + 1)                 # weight of a trip relative to its parent trip
    subtree = own_work.astype(float).copy()    # work of a trip with its nested loops, weighted

    def settle(e: int) -> np.ndarray:
        loop, _, n, _, plan, sparse = loops[e]
        ids = trips_of[e]
        if sparse_view and sparse:
            for t in ids:
                rel[t] = 0.0
            plan, ids = sparse, [t for t in ids if trip_list[t - 1][1] in sparse]
        for t in ids:
            rel[t] = trip_weight(n, plan, trip_list[t - 1][1])
        if _sampled(n, plan):
            witness = [t for t in ids if trip_list[t - 1][1] == HEAD - 1]
            middle = [t for t in ids if HEAD <= trip_list[t - 1][1] < n - TAIL]
            if witness and middle:
                seen = subtree[witness[0]]
                mean = subtree[middle].mean(axis=0)
                if np.any((seen > 0) & (mean < LIGHTER * seen)):
                    rel[witness[0]] = 1.0 + (n - HEAD - TAIL)
                    rel[middle] = 0.0
                    if on_witness is not None:
                        on_witness(loop)
        return sum((rel[t] * subtree[t] for t in ids), np.zeros(subtree.shape[1]))

    for t in range(n_trips, 0, -1):           # children have larger ids than their parent trip
        for e in children[t]:
            subtree[t] += settle(e)
    for e in children[0]:
        settle(e)
    weights = [1.0] * (n_trips + 1)
    for t, (e, _) in enumerate(trip_list, start=1):
        weights[t] = weights[loops[e][3]] * rel[t]
    total = sum(n * weights[parent] for _, _, n, parent, _, _ in loops)
    return weights, total
