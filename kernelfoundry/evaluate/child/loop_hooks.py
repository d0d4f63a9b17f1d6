"""Kernel loops under the verifier: sampled ``for`` trips, counted ``while`` trips, private globals.

Triton's interpreter re-executes each ``@triton.jit`` function's source after its
own AST rewrite (``FunctionRewriter``).  :func:`install` patches that last step so
that (1) the rewritten function runs in a *private* globals dict (the candidate's
module names, the two names the interpreter's rewrite needs, a short list of
builtins and the loop helpers below) instead of the candidate's own module dict,
which upstream fills with the interpreter's globals; so the instrumentation is
unreachable from the candidate's namespace and no injected name leaks into it
(the branch-arm recorder of :mod:`arms` is added there too);
(2) every loop goes through a helper: ``for x in IT`` becomes
``for x in _kf_for(IT, "kernel:line")`` and ``while C`` is bracketed by
``_kf_while_begin`` / ``_kf_while_test(C, ...)`` / ``_kf_while_end``.

:data:`CONTROL` decides what the helpers do.  In ``full`` mode (correctness runs)
every trip runs; ``while`` loops are only counted, with a trip limit that turns a
spin-wait or an endless loop into a clear failure.  In ``sample`` mode (the trace)
a ``for`` loop of *n* > 6 trips runs trips ``0`` and ``1``, three seeded-random
middle trips and ``n-1``: a kernel cannot know which middle trips are looked at, so
it cannot make just those idle, and trip ``1`` (which follows trip 0 as in a full
run) is the witness of what an unsampled trip does (:mod:`trip_witness`).  The
child records, per loop execution, its trip count and the trips it ran; the judge
derives the weights (head and last trips stand for themselves, the middle samples
for the ``n-3`` middle trips).  ``while`` loops run
in full and record their trip count, so they cost what ``for`` loops cost.

Every sampled program is also *dense*: its loops run every trip (up to
:data:`DENSE_TRIPS` per loop for the launch's lead program, :data:`DENSE_TRIPS_OTHERS`
for the others, a random sample of that many beyond; at most :data:`BUDGET_LOOPS` times
that per loop site and program, so nested loops cannot use up the budget of the loops
after them).  Every trip records its counts and sectors; the sparse plan's trips alone
anchor footprints (the other programs ran only those), so the judge sees what the sparse samples missed (work that sits on rare
trips) and corrects the program's estimate (``counts``): by the lead's count where
the program's sparse view is the lead's, by its own otherwise, so work put only in some
programs (odd rows, say) cannot hide behind a lighter one.
"""

from __future__ import annotations

import ast
import builtins
import random
from dataclasses import dataclass, field
from typing import Any

from ...harness.arms import ARM_HELPER, _kf_arm, instrument_kernel
from ..contract.language import KERNEL_BUILTINS
from .interpreter_gaps import LoopIndex
from .loop_limit import WHILE_TRIP_LIMIT, LoopLimit
from .ticket_desk import (TICKET_END_HELPER, TICKET_HELPER, TICKET_LOOP_HELPER, TicketRun, _kf_ticket,
                      _kf_ticket_end, _kf_ticket_loop, instrument_tickets)
from ..trace.loop_plan import BUDGET_LOOPS, DENSE_TRIPS, DENSE_TRIPS_OTHERS, dense_plan, trip_plan

FOR_HELPER, WHILE_BEGIN, WHILE_TEST, WHILE_END = "_kf_for", "_kf_while_begin", "_kf_while_test", "_kf_while_end"


@dataclass
class LoopExec:
    """One execution of one loop inside one program."""

    loop: str                  # "kernel:line"
    kind: str                  # "for" | "while"
    n: int                     # full trip count (while: trips run)
    parent: int                # trip id the loop runs in (0: outside loops)
    plan: list[int] = field(default_factory=list)   # for: trips run
    sparse: list[int] = field(default_factory=list) # dense run: the sparse plan inside its trips


class LoopControl:
    """Per-program loop bookkeeping of the child; read by the trace session after each program."""

    def __init__(self) -> None:
        self.sampling = False
        self.dense = False                 # this program runs its loops densely (set after reset)
        self.first_trips_only = False      # the wave pass: a site's first access is in a loop's first trip
        self.seed = 0
        self.rng = random.Random(0)
        self.reset()

    def reset(self, program_key: str = "") -> None:
        self.execs: list[LoopExec] = []
        self.trips: list[tuple[int, int]] = [(-1, 0)]      # trip id -> (exec index, trip index); id 0: none
        self.trip_sparse: list[bool] = [True]               # trip id -> on the sparse plan (its parents too)
        self.stack: list[int] = [0]
        self.open_whiles: list[tuple[int, int]] = []        # (exec index, depth of self.stack at begin)
        self.epoch = getattr(self, "epoch", 0) + 1
        self.rng = random.Random(f"{self.seed}:{program_key}")
        self.dense_rng = random.Random(f"{self.seed}:{program_key}:dense")   # leaves the sparse plans alone
        self.dense = False
        self.dense_trips = DENSE_TRIPS                      # this program's dense trips per loop
        self.dense_left: dict[str, int] = {}               # loop site -> dense trips it may still run
        self.plans: dict[int, list[int]] = {}
        self.dense_plans: dict[int, list[int]] = {}

    @property
    def current_trip(self) -> int:
        return self.stack[-1]

    @property
    def off_sparse_plan(self) -> bool:
        """A dense program is in a trip off the sparse plan (counted, but no anchor: the other
        programs did not run it)."""
        return self.dense and not self.trip_sparse[self.stack[-1]]

    def iterate(self, iterable: Any, loop: str, static: bool = False):
        if isinstance(iterable, range) and not static:       # a GPU's loop variable is a tensor
            iterable = _LoopRange(iterable)
        if not self.sampling:
            yield from iterable
            return
        items = iterable if isinstance(iterable, (_LoopRange, TicketRun)) else tuple(iterable)
        n = len(items)
        plan = [0] if self.first_trips_only and n else self.plans.get(n)
        if plan is None:                 # one plan per trip count: passes over the same data sample the
            plan = self.plans[n] = trip_plan(n, self.rng)   # same trips, so re-reads stay re-reads
        sparse: list[int] = []
        budget = BUDGET_LOOPS * self.dense_trips
        if self.dense and len(plan) < n and self.dense_left.get(loop, budget) > 0:
            dense = self.dense_plans.get(n)  # one dense plan per trip count too (re-reads stay re-reads)
            if dense is None:
                dense = self.dense_plans[n] = dense_plan(n, plan, self.dense_rng, self.dense_trips)
            sparse, plan = plan, dense
            self.dense_left[loop] = self.dense_left.get(loop, budget) - len(plan)
        self.execs.append(LoopExec(loop=loop, kind="for", n=n, parent=self.current_trip, plan=plan, sparse=sparse))
        exec_index, epoch = len(self.execs) - 1, self.epoch
        on_sparse, sparse_set = self.trip_sparse[self.current_trip], set(sparse)
        for index in plan:
            self.trips.append((exec_index, index))
            self.trip_sparse.append(on_sparse and (not sparse_set or index in sparse_set))
            self.stack.append(len(self.trips) - 1)
            try:
                yield items[index]
            finally:
                # a program aborted mid-loop may close this generator late (on garbage collection);
                # by then the state was reset and must not be touched
                if self.epoch == epoch:
                    self.stack.pop()

    def while_begin(self, loop: str) -> None:
        self.execs.append(LoopExec(loop=loop, kind="while", n=0, parent=self.current_trip))
        self.open_whiles.append((len(self.execs) - 1, len(self.stack)))

    def while_test(self, value: Any, loop: str) -> bool:
        result = bool(value)
        if result and self.open_whiles:
            loop_exec = self.execs[self.open_whiles[-1][0]]
            loop_exec.n += 1
            if loop_exec.n > WHILE_TRIP_LIMIT:
                raise LoopLimit(f"the while loop at {loop} ran more than {WHILE_TRIP_LIMIT} trips: an endless loop or "
                                "a wait for another program (programs must not wait on each other)")
        return result

    def while_end(self, loop: str) -> None:
        if self.open_whiles:
            self.open_whiles.pop()


class _LoopRange:
    """A ``range`` whose items are :class:`LoopIndex` values (``tl.static_range`` keeps plain ints,
    as its variable is a constexpr on a GPU too)."""

    __slots__ = ("items",)

    def __init__(self, items: range):
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> LoopIndex:
        return LoopIndex(self.items[index])

    def __iter__(self):
        return map(LoopIndex, self.items)


CONTROL = LoopControl()


def _for(iterable, loop, static=False):
    return CONTROL.iterate(iterable, loop, static)


def _while_begin(loop):
    CONTROL.while_begin(loop)


def _while_test(value, loop):
    return CONTROL.while_test(value, loop)


def _while_end(loop):
    CONTROL.while_end(loop)


HELPERS = {FOR_HELPER: _for, WHILE_BEGIN: _while_begin, WHILE_TEST: _while_test, WHILE_END: _while_end,
           ARM_HELPER: _kf_arm, TICKET_HELPER: _kf_ticket, TICKET_LOOP_HELPER: _kf_ticket_loop,
           TICKET_END_HELPER: _kf_ticket_end}


class LoopTransformer(ast.NodeTransformer):
    """Route every loop of one rewritten jit function through the helpers (line numbers kept)."""

    def __init__(self, kernel: str):
        self.kernel = kernel

    def _call(self, name: str, args: list[ast.expr], like: ast.AST) -> ast.Call:
        return ast.copy_location(ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=[]), like)

    def visit_For(self, node: ast.For):
        self.generic_visit(node)
        loop = ast.Constant(value=f"{self.kernel}:{node.lineno}")
        static = isinstance(node.iter, ast.Call) and (
            isinstance(node.iter.func, ast.Attribute) and node.iter.func.attr == "static_range"
            or isinstance(node.iter.func, ast.Name) and node.iter.func.id == "static_range")
        node.iter = self._call(FOR_HELPER, [node.iter, loop, ast.Constant(value=static)], node.iter)
        return node

    def visit_While(self, node: ast.While):
        self.generic_visit(node)
        loop = f"{self.kernel}:{node.lineno}"
        node.test = self._call(WHILE_TEST, [node.test, ast.Constant(value=loop)], node.test)
        begin = ast.copy_location(ast.Expr(self._call(WHILE_BEGIN, [ast.Constant(value=loop)], node)), node)
        end = ast.copy_location(ast.Expr(self._call(WHILE_END, [ast.Constant(value=loop)], node)), node)
        return [begin, node, end]


_installed = False


class ReservedName(BaseException):
    """The candidate's module binds a name the kernel globals need (the static gate refuses it too)."""


#: the interpreter's own names that upstream's rewritten code reads as globals
INTERPRETER_NAMES = ("interpreter_semantic", "_InterpreterComparison")


def kernel_globals(fn_globals: dict[str, Any], interp_module: Any) -> dict[str, Any]:
    """The private globals a rewritten kernel runs in (never the candidate's module dict).

    A module bound to the interpreter's own objects under their names is not a clash: Triton's
    unpatched rewrite copies them into the module of every function it rewrites, and a shared
    module such as ``triton.language.standard`` (``tl.sum``, ``tl.max``...) keeps them when a
    kernel ran in this process before :func:`install` (a trusted in-process check after a test
    that launched a kernel directly)."""
    clash = sorted(n for n in fn_globals if (n in HELPERS and fn_globals[n] is not HELPERS[n])
                   or (n in INTERPRETER_NAMES and fn_globals[n] is not getattr(interp_module, n)))
    if clash:
        raise ReservedName(f"the module binds {', '.join(clash)}, names reserved for the verifier and the interpreter")
    namespace = {name: value for name, value in fn_globals.items() if not name.startswith("__")}
    for name in INTERPRETER_NAMES:                                          # what upstream's rewrite emits
        namespace[name] = getattr(interp_module, name)
    namespace.update(HELPERS)
    namespace["__builtins__"] = {name: getattr(builtins, name) for name in KERNEL_BUILTINS}
    namespace["__name__"] = fn_globals.get("__name__", "kernel")
    return namespace


def install() -> None:
    """Patch Triton's interpreter rewrite (once per process; only ever in the sandboxed child)."""
    global _installed
    if _installed:
        return
    from triton.runtime import interpreter as interp

    def compile_and_exec(self, transformed_ast):
        transformed_ast = instrument_tickets(transformed_ast)      # before the arms: on the source's calls
        transformed_ast = instrument_kernel(transformed_ast, self.fn.__name__)
        transformed_ast = LoopTransformer(self.fn.__name__).visit(transformed_ast)
        ast.fix_missing_locations(transformed_ast)
        code = compile(transformed_ast, filename=self.filename, mode="exec")
        local_namespace = {**self.kwargs}
        exec(code, kernel_globals(self.fn.__globals__, interp), local_namespace)
        return local_namespace[self.fn.__name__]

    interp.FunctionRewriter._compile_and_exec = compile_and_exec
    _installed = True
