"""Which trips of a kernel loop a traced program runs, and how many real trips each one stands for.

A sampled (``sparse``) program runs a loop of *n* > 6 trips at trips ``0`` and ``1``, three seeded
random middle trips and ``n-1``; a ``dense`` program runs every trip up to a limit, a random sample
beyond.  The child's loop hooks (:mod:`kernelfoundry.evaluate.child.loop_hooks`) follow these plans;
the judge's weights (:mod:`trip_witness`) are computed from them.
"""

from __future__ import annotations

import random

HEAD, MIDDLE, TAIL = 2, 3, 1
#: A launch's lead program runs up to this many trips of one loop densely (a random sample of
#: them beyond); the other sampled programs up to :data:`DENSE_TRIPS_OTHERS` (their counts stand
#: in only where they differ from the lead's: see ``counts``) ...
DENSE_TRIPS = 1024
DENSE_TRIPS_OTHERS = 256
#: ... and at most this many times that per loop site in one program (later executions of that
#: loop, e.g. an inner loop inside a long outer loop, sample as a sparse program does).
BUDGET_LOOPS = 4


def trip_plan(n: int, rng: random.Random) -> list[int]:
    """The trip indices a sampled loop of *n* trips runs, ascending."""
    if n <= HEAD + MIDDLE + TAIL:
        return list(range(n))
    middle = sorted(rng.sample(range(HEAD, n - TAIL), MIDDLE))
    return list(range(HEAD)) + middle + list(range(n - TAIL, n))


def dense_plan(n: int, sparse: list[int], rng: random.Random, limit: int = DENSE_TRIPS) -> list[int]:
    """The trips a dense program runs: all of them, or the sparse plan plus random middle trips,
    *limit* in all."""
    if n <= limit:
        return list(range(n))
    middle = set(sparse[HEAD:len(sparse) - TAIL])
    rest = [i for i in range(HEAD, n - TAIL) if i not in middle]
    middle.update(rng.sample(rest, limit - HEAD - TAIL - len(middle)))
    return list(range(HEAD)) + sorted(middle) + list(range(n - TAIL, n))


def trip_weight(n: int, plan: list[int], index: int) -> float:
    """How many real trips the sampled trip *index* stands for (weights over *plan* sum to *n*)."""
    if len(plan) >= n or index < HEAD or index >= n - TAIL:
        return 1.0
    return (n - HEAD - TAIL) / (len(plan) - HEAD - TAIL)
