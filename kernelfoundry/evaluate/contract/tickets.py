"""Work tickets: the one use of an atomic's result the verifier admits.

``t = tl.atomic_add(counter_ptr, 1)`` hands out tickets in the order programs arrive, which is
how stream-K work queues and persistent kernels take their next unit of work.  The verifier
runs programs one after another (checks) or only a sample of them (the trace), where real
arrival order would give the first program every ticket and a sampled program whichever
ticket its place in the sample draws.  So the child *schedules* tickets (``child/ticket_desk.py``):
the k-th ticket a program draws from a counter is ``base + step * (k * G + a)``, with ``G``
the launch's programs and ``a`` the program's arrival index (round robin: every program takes
its first ticket, then its second...).  That is a schedule a GPU can produce, checks and trace
see the same one (the trace's programs arrive in launch order, and so do one check run's
programs; the other check runs shuffle arrival), and work chosen by a ticket is sampled by the
trace as work chosen by a program id is.

A ticket call is ``tl.atomic_add(P, STEP)``: ``P`` a parameter of the jit function used nowhere
else in it (the counter only hands out tickets: nobody reads, stores or offsets it), ``STEP`` a
positive int literal, and only the ``sem``/``scope`` options, as constants.  Any other atomic
whose result is used stays refused (:mod:`..judge.anticheat_atomics`).
"""

from __future__ import annotations

import ast

TICKET_HELPER = "_kf_ticket"
TICKET_OPTIONS = frozenset({"sem", "scope"})


def _params(fn: ast.FunctionDef) -> set[str]:
    return {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}


def _shape_ok(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and len(node.args) == 2 and isinstance(node.args[0], ast.Name)):
        return False
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "atomic_add"
            or isinstance(func, ast.Name) and func.id == "atomic_add"):
        return False
    step = node.args[1]
    if not (isinstance(step, ast.Constant) and type(step.value) is int and step.value > 0):
        return False
    return all(k.arg in TICKET_OPTIONS and isinstance(k.value, ast.Constant) for k in node.keywords)


def ticket_calls(fn: ast.FunctionDef) -> list[ast.Call]:
    """The ticket calls of *fn* (see the module docstring); a counter used any other way makes none of
    its calls tickets."""
    params = _params(fn)
    calls = [n for n in ast.walk(fn) if _shape_ok(n) and n.args[0].id in params]
    counters = {c.args[0].id for c in calls}
    as_ticket = {id(c.args[0]) for c in calls}
    misused = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in counters and id(n) not in as_ticket}
    return [c for c in calls if c.args[0].id not in misused]
