"""Static rules on how kernels may use atomics and volatile loads.

The verifier runs a launch's programs one after another (the checks) or only a sample of
them (the trace), so nothing that depends on the order in which programs arrive can be
checked or priced:

* a ``while`` loop waiting on another program (an atomic or volatile load in its
  condition) is a spin-wait: Triton does not promise that programs run concurrently;
* an atomic's *returned value* is an arrival ticket: work chosen by it (``if t < 2048``,
  a tile index, an address, a mask) runs in the checks on tickets 0..G-1 in program order,
  in the trace on the few tickets the sampled programs draw.  A kernel could leave most of
  a large launch's output unwritten, hide a whole pass from the trace on tickets no sampled
  program gets, or chain chunks through values a GPU has not published yet.  Atomics may
  therefore only accumulate into memory (split-K, histograms, a mean): called as a
  statement, their result unused; except the *work ticket* (``tl.atomic_add(counter, 1)`` on a
  counter used for nothing else), whose values the child schedules so that checks and trace
  see the same tickets, spread as program ids are (:mod:`..contract.tickets`).
"""

from __future__ import annotations

import ast
from typing import Callable

from ..contract.tickets import ticket_calls

ATOMIC_PREFIX = "atomic_"


def _last(name: str | None) -> str:
    return (name or "").rsplit(".", 1)[-1]


def _is_atomic_ref(node: ast.AST, resolve: Callable[[ast.AST], str | None]) -> bool:
    """A name or attribute that denotes an atomic op (``tl.atomic_add``, ``ptr.atomic_max``,
    or a from-import of one under any local name)."""
    if isinstance(node, ast.Attribute):
        return node.attr.startswith(ATOMIC_PREFIX)
    if isinstance(node, ast.Name):
        return node.id.startswith(ATOMIC_PREFIX) or _last(resolve(node)).startswith(ATOMIC_PREFIX)
    return False


def used_atomic_results(fn: ast.FunctionDef, resolve: Callable[[ast.AST], str | None]) -> list[ast.AST]:
    """Atomic ops in *fn* used other than as a statement whose value is discarded: a call whose
    result is assigned, compared, passed on or indexed, and an atomic op taken as a value."""
    allowed: set[int] = {id(call.func) for call in ticket_calls(fn)}      # work tickets (contract/tickets.py)
    for node in ast.walk(fn):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and _is_atomic_ref(node.value.func, resolve):
            allowed.add(id(node.value.func))
    return [node for node in ast.walk(fn)
            if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in allowed
            and _is_atomic_ref(node, resolve)]


def waits(node: ast.AST | None, dotted: Callable[[ast.AST], str | None], tickets: frozenset[int] = frozenset()) -> bool:
    """Does *node* contain an atomic op or a volatile load?  (A work ticket, call id in *tickets*, is not
    a wait: it never blocks, and each draw gives a larger ticket.)"""
    for sub in ast.walk(node) if node is not None else ():
        if isinstance(sub, ast.Call) and id(sub) not in tickets:
            last = _last(dotted(sub.func))
            if last.startswith(ATOMIC_PREFIX):
                return True
            if last == "load" and any(k.arg == "volatile" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                                      for k in sub.keywords):
                return True
    return False


def spin_waits(fn: ast.FunctionDef, dotted: Callable[[ast.AST], str | None]) -> list[ast.While]:
    """``while`` loops of *fn* whose condition reads an atomic or volatile load (directly or through
    a name assigned one inside the loop)."""
    found = []
    tickets = frozenset(id(c) for c in ticket_calls(fn))
    for loop in (n for n in ast.walk(fn) if isinstance(n, ast.While)):
        waited = set()
        for node in ast.walk(loop):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and waits(node.value, dotted, tickets):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                waited |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if waits(loop.test, dotted, tickets) or any(isinstance(n, ast.Name) and n.id in waited for n in ast.walk(loop.test)):
            found.append(loop)
    return found
