"""Scheduled work tickets in the child (the contract: :mod:`..contract.tickets`).

Each ticket call ``tl.atomic_add(P, STEP)`` is rewritten to ``_kf_ticket(P, tl.atomic_add(P, STEP),
STEP)``: the atomic still updates the counter as on a GPU, and :data:`DESK` replaces the value it
returns by the scheduled ticket ``base + STEP * (k * G + a)`` (``base``: the counter at the launch's
first draw; ``k``: how many tickets this program drew from it before; ``G``: the launch's programs;
``a``: the program's arrival index, set by the session that runs it).
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ..contract.tickets import TICKET_HELPER, ticket_calls


class TicketDesk:
    """Per launch: each counter's base; per program: its arrival index and draws per counter."""

    def __init__(self) -> None:
        self.launch: Any = None
        self.programs = 1
        self.arrival = 0
        self.bases: dict[int, int] = {}
        self.drawn: dict[int, int] = {}

    def begin_program(self, launch: Any, programs: int, arrival: int) -> None:
        if launch is not self.launch:
            self.launch, self.bases = launch, {}
        self.programs, self.arrival, self.drawn = programs, arrival, {}

    def draw(self, ptr: Any, old: Any, step: int) -> Any:
        import triton.language as tl
        from triton.runtime import interpreter as interp
        address = int(np.asarray(ptr.handle.data).reshape(-1)[0])
        value = np.asarray(old.handle.data)
        base = self.bases.setdefault(address, int(value.reshape(-1)[0]))
        k = self.drawn.get(address, 0)
        self.drawn[address] = k + 1
        ticket = base + step * (k * self.programs + self.arrival)
        return tl.core.tensor(interp.TensorHandle(np.full(value.shape, ticket, dtype=value.dtype), old.dtype),
                              old.type)


DESK = TicketDesk()


def _kf_ticket(ptr, old, step):
    return DESK.draw(ptr, old, step)


class TicketTransformer(ast.NodeTransformer):
    """Wrap the ticket calls of one jit function (found on the function as the static gate found them)."""

    def __init__(self, fn: ast.FunctionDef):
        self.calls = {id(c) for c in ticket_calls(fn)}

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if id(node) not in self.calls:
            return node
        ptr = ast.Name(id=node.args[0].id, ctx=ast.Load())
        return ast.copy_location(ast.Call(func=ast.Name(id=TICKET_HELPER, ctx=ast.Load()),
                                          args=[ptr, node, ast.Constant(value=node.args[1].value)],
                                          keywords=[]), node)


def instrument_tickets(tree: ast.AST) -> ast.AST:
    """Every jit function in *tree* with its ticket calls wrapped."""
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        TicketTransformer(fn).visit(fn)
    return tree
