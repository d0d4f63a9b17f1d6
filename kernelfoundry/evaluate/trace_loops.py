"""Loop sampling for the trace: run a few trips of every kernel loop, weight them back.

:func:`rewrite_loops` edits a candidate's source so that every ``for`` loop inside a
``@triton.jit`` function iterates through :func:`sampled_loop` (injected into the
module namespace as ``_kf_sampled_loop``).  The helper knows the full trip count
*n*; for ``n > 3`` it runs trips ``0, 1, n-1`` with weights ``1, n-2, 1`` (a
stratified sample: the first trip stands for itself, the second for every middle
trip, the last for itself), so the weights always sum to *n*.  Nested loops
multiply.  Counts recorded inside a trip are scaled by :func:`current_weight`.

The edit is textual (the loop's iterable is wrapped in place), so line numbers in
the rewritten module match the original and error messages point at the right line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

#: Name under which :func:`sampled_loop` is injected into the traced module.
HELPER_NAME = "_kf_sampled_loop"
HEAD_TRIPS = 2   # trips run from the start of a loop (the first stands for itself)
TAIL_TRIPS = 1   # trips run from the end


@dataclass
class LoopState:
    """Per-program loop bookkeeping, reset by the tracer before each program."""

    weights: list[float] = field(default_factory=lambda: [1.0])   # product of enclosing trip weights
    trips: list[int] = field(default_factory=lambda: [0])          # serial of the enclosing sampled trip
    next_trip: int = 0
    loop_trips: float = 0.0                                        # full trip counts, weighted by outer loops
    epoch: int = 0                                                 # bumped by reset()

    def reset(self) -> None:
        self.weights[:] = [1.0]
        self.trips[:] = [0]
        self.next_trip = 0
        self.loop_trips = 0.0
        self.epoch += 1


STATE = LoopState()


def current_weight() -> float:
    """How many real executions one recorded event stands for (1 outside sampled loops)."""
    return STATE.weights[-1]


def current_trip() -> int:
    """A serial number of the innermost sampled trip being executed (0 outside loops)."""
    return STATE.trips[-1]


def trip_plan(n: int) -> list[tuple[int, float]]:
    """(trip index, weight) pairs to run for a loop of *n* trips; weights sum to *n*."""
    if n <= HEAD_TRIPS + TAIL_TRIPS:
        return [(i, 1.0) for i in range(n)]
    middle = HEAD_TRIPS - 1
    middle_weight = (n - 1 - TAIL_TRIPS) / middle
    plan = [(0, 1.0)] + [(i, middle_weight) for i in range(1, HEAD_TRIPS)]
    return plan + [(n - TAIL_TRIPS + j, 1.0) for j in range(TAIL_TRIPS)]


def sampled_loop(iterable):
    """Iterate a sampled subset of *iterable*'s items, pushing each trip's weight."""
    items = iterable if isinstance(iterable, range) else tuple(iterable)
    n = len(items)
    state = STATE
    epoch = state.epoch
    state.loop_trips += n * state.weights[-1]
    for index, weight in trip_plan(n):
        state.next_trip += 1
        state.weights.append(state.weights[-1] * weight)
        state.trips.append(state.next_trip)
        try:
            yield items[index]
        finally:
            # A program aborted mid-loop may close this generator late (on garbage
            # collection); by then its state was reset and must not be touched.
            if state.epoch == epoch:
                state.weights.pop()
                state.trips.pop()


def _is_jit_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name == "jit"


def loop_iterables(source: str) -> list[ast.expr]:
    """The iterable expressions of every ``for`` loop inside ``@triton.jit`` functions."""
    tree = ast.parse(source)
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _is_jit_decorator(d) for d in node.decorator_list):
            for inner in ast.walk(node):
                if isinstance(inner, ast.For):
                    found.append(inner.iter)
    # A jit function nested in a jit function would be visited twice.
    unique = {(e.lineno, e.col_offset): e for e in found}
    return list(unique.values())


def rewrite_loops(source: str) -> str:
    """*source* with every jit-function ``for`` iterable wrapped in the sampling helper."""
    lines = source.splitlines(keepends=True)
    encoded = [line.encode("utf-8") for line in lines]
    edits: list[tuple[int, int, bytes]] = []   # (line index, byte column, text to insert)
    for expr in loop_iterables(source):
        edits.append((expr.lineno - 1, expr.col_offset, f"{HELPER_NAME}(".encode()))
        edits.append((expr.end_lineno - 1, expr.end_col_offset, b")"))
    # Apply from the end of the file backwards so earlier offsets stay valid.
    for line, col, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        encoded[line] = encoded[line][:col] + text + encoded[line][col:]
    return b"".join(encoded).decode("utf-8")
