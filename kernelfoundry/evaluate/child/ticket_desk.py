"""Scheduled work tickets in the child (the contract: :mod:`..contract.tickets`).

Each ticket call ``tl.atomic_add(P, STEP)`` is rewritten to ``_kf_ticket(P, tl.atomic_add(P, STEP),
STEP)``: the atomic still updates the counter as on a GPU, and :data:`DESK` replaces the value it
returns by the scheduled ticket ``base + STEP * (k * G + a)`` (``base``: the counter at the launch's
first draw; ``k``: how many tickets this program drew from it before; ``G``: the launch's programs;
``a``: the program's arrival index, set by the session that runs it).

A ticket loop, ``X = ticket; while <pure test of X>: ...; X = ticket``, becomes ``for X in
_kf_ticket_loop(P, STEP, X, lambda X: <test>): ...`` followed by ``X = _kf_ticket_end(P)``: the
scheduled tickets are known in advance, so the trips are those tickets, and the trace samples them
as it samples any ``for`` loop's (a stream-K queue of 124 units per program ran every trip before).
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ..contract.tickets import TICKET_HELPER, ticket_calls
from .loop_limit import WHILE_TRIP_LIMIT, LoopLimit

TICKET_LOOP_HELPER, TICKET_END_HELPER = "_kf_ticket_loop", "_kf_ticket_end"


class TicketError(Exception):
    """A kernel drew tickets in a way the schedule cannot stand for."""


class TicketDesk:
    """Per launch: each counter's base; per program: its arrival index and draws per counter."""

    def __init__(self) -> None:
        self.launch: Any = None
        self.programs = 1
        self.arrival = 0
        self.bases: dict[int, int] = {}
        self.drawn: dict[int, int] = {}
        self.after: dict[int, Any] = {}        # counter -> the ticket that ends its ticket loop (running or done)
        self.looping: set[int] = set()         # counters whose ticket loop is running

    def begin_program(self, launch: Any, programs: int, arrival: int) -> None:
        if launch is not self.launch:
            self.launch, self.bases = launch, {}
        self.programs, self.arrival, self.drawn, self.after, self.looping = programs, arrival, {}, {}, set()

    def draw(self, ptr: Any, old: Any, step: int) -> Any:
        """The scheduled ticket for an atomic that returned *old* (the counter before it)."""
        address = _address(ptr)
        if address in self.looping:
            raise TicketError("a ticket loop's counter was drawn inside the trips (through another parameter "
                              "bound to the same tensor): on a GPU those draws take the loop's tickets")
        self.bases.setdefault(address, int(np.asarray(old.handle.data).reshape(-1)[0]))
        return self.next(address, step, like=old)

    def next(self, address: int, step: int, like: Any) -> Any:
        """This program's next ticket from the counter at *address* (drawn from before), typed as *like*."""
        k = self.drawn.get(address, 0)
        self.drawn[address] = k + 1
        ticket = self.bases[address] + step * (k * self.programs + self.arrival)
        return _scalar(ticket, like)

    def loop(self, ptr: Any, step: int, first: Any, cond: Any, elementwise: bool) -> "TicketRun":
        """The tickets a ``while cond(t): ...; t = ticket`` loop runs its trips on, from *first*; the
        ticket that ends it is kept for :meth:`ended`.  An *elementwise* condition (arithmetic and
        comparisons only) is evaluated on a block of the coming tickets at once; one with ``and``,
        ``or`` or ``not`` (which ask a block for one truth value) one ticket at a time."""
        address = _address(ptr)
        k0, first_value = self.drawn.get(address, 0), int(np.asarray(first.handle.data).reshape(-1)[0])
        dtype = np.asarray(first.handle.data).dtype
        chunk, start, values = 1024, 0, []
        while True:
            ks = np.arange(start, start + chunk, dtype=np.int64)       # candidate j: first, then draws k0 + j - 1
            cand = np.where(ks == 0, first_value,
                            self.bases[address] + step * ((k0 + ks - 1) * self.programs + self.arrival))
            holds = _holds(cond, cand.astype(dtype), first, elementwise)
            values.append(cand)
            if not holds.all():
                m = start + int(np.argmin(holds))
                break
            start += chunk
            chunk = min(chunk * 4, 1 << 16)
            if start > WHILE_TRIP_LIMIT:
                raise LoopLimit(f"a loop over work tickets ran more than {WHILE_TRIP_LIMIT} trips")
        tickets = np.concatenate(values).astype(dtype)
        self.drawn[address] = k0 + m
        self.after[address] = _scalar(int(tickets[m]), first)
        self.looping.add(address)
        return TicketRun(tickets[:m], first)

    def ended(self, ptr: Any) -> Any:
        address = _address(ptr)
        self.looping.discard(address)
        return self.after[address]


class TicketRun:
    """A loop's tickets as scalar tensors typed like *like* (made when a trip asks for one)."""

    __slots__ = ("values", "like")

    def __init__(self, values: np.ndarray, like: Any):
        self.values, self.like = values, like

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: int) -> Any:
        return _scalar(int(self.values[index]), self.like)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def _scalar(value: int, like: Any) -> Any:
    import triton.language as tl
    from triton.runtime import interpreter as interp
    data = np.asarray(like.handle.data)
    return tl.core.tensor(interp.TensorHandle(np.full(data.shape, value, dtype=data.dtype), like.dtype), like.type)


def _holds(cond: Any, tickets: np.ndarray, like: Any, elementwise: bool) -> np.ndarray:
    """cond at each of *tickets*: on all of them as one block when it is elementwise, else one by one."""
    import triton.language as tl
    from triton.runtime import interpreter as interp
    head = bool(cond(_scalar(int(tickets[0]), like)))    # as the loop tests it (a block here fails as there)
    if elementwise:
        block = tl.core.tensor(interp.TensorHandle(tickets, like.dtype), tl.block_type(like.dtype, [tickets.size]))
        try:
            out = cond(block)
            data = np.asarray(out.handle.data) if isinstance(out, tl.core.tensor) else None
            if data is not None and data.shape == tickets.shape and bool(data[0]) == head:
                return data.astype(bool)
        except Exception:  # noqa: BLE001 - a block it cannot take: one ticket at a time
            pass
    holds = np.zeros(tickets.shape, dtype=bool)
    for i, ticket in enumerate(tickets):                 # up to the first ticket that ends the loop, as it runs
        holds[i] = head if i == 0 else bool(cond(_scalar(int(ticket), like)))
        if not holds[i]:
            break
    return holds


def _address(ptr: Any) -> int:
    return int(np.asarray(ptr.handle.data).reshape(-1)[0])


DESK = TicketDesk()


def _kf_ticket(ptr, old, step):
    return DESK.draw(ptr, old, step)


def _kf_ticket_loop(ptr, step, first, cond, elementwise):
    return DESK.loop(ptr, step, first, cond, elementwise)


def _kf_ticket_end(ptr):
    return DESK.ended(ptr)


#: Node types a ticket loop's condition may hold: it is evaluated once per ticket before the trips run,
#: so it must be pure (no calls, no subscripts) and read nothing the trips change.
_PURE = (ast.Name, ast.Constant, ast.Compare, ast.BinOp, ast.BoolOp, ast.UnaryOp, ast.Load,
         ast.operator, ast.cmpop, ast.boolop, ast.unaryop)


def _ticket_of(value: ast.AST, tickets: dict[int, ast.Call]) -> ast.Call | None:
    """The ticket call *value* is (also through the interpreter's ``to_tensor(value, False)`` wrapper)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to_tensor" \
            and isinstance(value.func.value, ast.Name) and value.func.value.id == "interpreter_semantic" and value.args:
        value = value.args[0]
    return tickets.get(id(value))


def _ticket_assign(stmt: ast.AST, tickets: dict[int, ast.Call]) -> tuple[str, ast.Call] | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        call = _ticket_of(stmt.value, tickets)
        if call is not None:
            return stmt.targets[0].id, call
    return None


def _ticket_loop(before: ast.AST, loop: ast.AST, tickets: dict[int, ast.Call]) -> tuple[str, ast.Call] | None:
    """(ticket name, ticket call) when *loop* is ``while <pure test of X>: ...; X = ticket`` right after
    ``X = ticket`` of the same counter and step, with no break/continue and nothing in the test that
    the trips assign; else None."""
    if not isinstance(loop, ast.While) or loop.orelse or not loop.body:
        return None
    head, tail = _ticket_assign(before, tickets), _ticket_assign(loop.body[-1], tickets)
    if head is None or tail is None or head[0] != tail[0] \
            or ast.dump(head[1]) != ast.dump(tail[1]):
        return None
    name = head[0]
    test_names = {n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name)}
    assigned = {n.id for stmt in loop.body[:-1] for n in ast.walk(stmt)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if name not in test_names or (test_names - {name}) & assigned or name in assigned \
            or not all(isinstance(n, _PURE) for n in ast.walk(loop.test)) \
            or any(isinstance(n, (ast.Break, ast.Continue)) for stmt in loop.body for n in ast.walk(stmt)) \
            or any(id(n) in tickets and n.args[0].id == head[1].args[0].id      # another draw inside the trips
                   for stmt in loop.body[:-1] for n in ast.walk(stmt)):
        return None
    return head


def _rewrite_ticket_loops(body: list[ast.stmt], tickets: dict[int, ast.Call]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in body:
        for field_name in ("body", "orelse"):
            inner = getattr(stmt, field_name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                setattr(stmt, field_name, _rewrite_ticket_loops(inner, tickets))
        found = _ticket_loop(out[-1], stmt, tickets) if out else None
        if found is None:
            out.append(stmt)
            continue
        name, call = found
        ptr, step = call.args[0].id, call.args[1].value
        elementwise = not any(isinstance(n, (ast.BoolOp, ast.Not)) for n in ast.walk(stmt.test))
        cond = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=name)], kwonlyargs=[],
                                             kw_defaults=[], defaults=[]), body=stmt.test)
        tickets_of = ast.Call(func=ast.Name(id=TICKET_LOOP_HELPER, ctx=ast.Load()),
                              args=[ast.Name(id=ptr, ctx=ast.Load()), ast.Constant(value=step),
                                    ast.Name(id=name, ctx=ast.Load()), cond, ast.Constant(value=elementwise)],
                              keywords=[])
        loop = ast.For(target=ast.Name(id=name, ctx=ast.Store()), iter=tickets_of, body=stmt.body[:-1] or [ast.Pass()],
                       orelse=[], type_comment=None)
        end = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                         value=ast.Call(func=ast.Name(id=TICKET_END_HELPER, ctx=ast.Load()),
                                        args=[ast.Name(id=ptr, ctx=ast.Load())], keywords=[]))
        out += [ast.copy_location(loop, stmt), ast.copy_location(end, stmt)]
    return out


class TicketTransformer(ast.NodeTransformer):
    """Wrap the ticket calls of one jit function (*calls*: their ids, found as the static gate finds them)."""

    def __init__(self, calls: set[int]):
        self.calls = calls

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if id(node) not in self.calls:
            return node
        ptr = ast.Name(id=node.args[0].id, ctx=ast.Load())
        return ast.copy_location(ast.Call(func=ast.Name(id=TICKET_HELPER, ctx=ast.Load()),
                                          args=[ptr, node, ast.Constant(value=node.args[1].value)],
                                          keywords=[]), node)


def instrument_tickets(tree: ast.AST) -> ast.AST:
    """Every jit function in *tree* with its ticket loops made ``for`` loops over their tickets (so the
    trace samples their trips as it samples any loop's) and its other ticket calls wrapped."""
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        tickets = {id(c): c for c in ticket_calls(fn)}
        if tickets:
            fn.body = _rewrite_ticket_loops(fn.body, tickets)
        TicketTransformer(set(tickets)).visit(fn)
    return tree
