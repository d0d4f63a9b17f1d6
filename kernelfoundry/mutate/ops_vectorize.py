"""Vectorise a unit-step loop: ``for f in range(A, N)`` walks a strided axis one scalar index at a
time (a reduction over channels, written as one load of a row of the fast axis per ``f``).

Each such top-level loop of a launched kernel becomes a block loop over ``BLOCK_R`` indices at
once, held on a new leading tile axis::

    for f_start in range(A, N, BLOCK_R):
        f = f_start + tl.arange(0, BLOCK_R)[:, None]      # [BLOCK_R, 1]: broadcasts against
        f_mask = f < N                                      #   the kernel's 1-D vectors
        x = tl.load(..., mask=<mask> & f_mask, ...)         # a [BLOCK_R, BLOCK] tile
        acc += tl.sum(tl.where(f_mask, E, 0), axis=0)       # sum accumulators
        acc = tl.maximum(acc, tl.max(tl.where(f_mask, E, -inf), axis=0))    # max (min alike)
        tl.store(..., mask=<mask> & f_mask)

so each load moves BLOCK_R rows of the fast axis in one instruction.  Where one block covers the
axis, ``whole_row`` then peels the loops and drops the repeated loads: the tile is read once.

Recognised body: assignments to names, accumulator updates (``A += E``, ``A = tl.maximum(A, E)``,
``tl.minimum``) of accumulators initialised with ``tl.zeros`` / ``tl.full`` before the loop and not
otherwise read in it, and ``tl.store`` calls whose address depends on the loop index.  Skipped
with a reason: control flow, reductions, scans, 2-D tiles or shape ops inside the loop, other
values carried from one trip to the next, or values of the last trip read after the loop.
"""

from __future__ import annotations

import ast

from .ast_module import (Skip, all_names, fresh_name, is_call_to, launched_kernels, loaded_names, read_params,
                         stored_names, template, template_expr, uses_dot, write_params)
from .ast_signature import add_template_param, launch_calls_in_launch
from .ops_base import Edit, OpContext, Operator, fit_space
from .ops_split import _reads_before_write
from .ops_tile2d import _REDUCTIONS, _REFUSED, _arg, _call_name, _set_arg

#: Indices per block; the first is the default.
ROW_BLOCKS = [16, 32, 64]
PARAM = "BLOCK_R"

_ACCUMULATE = {"maximum": ("max", "float('-inf')"), "minimum": ("min", "float('inf')")}


def _unit_loop(stmt: ast.stmt) -> tuple[str, ast.expr, ast.expr] | None:
    """``(index, start, bound)`` of ``for i in range(N)`` / ``range(A, N)`` / ``range(A, N, 1)``."""
    if not (isinstance(stmt, ast.For) and not stmt.orelse and isinstance(stmt.target, ast.Name)
            and is_call_to(stmt.iter, "range") and not stmt.iter.keywords and 1 <= len(stmt.iter.args) <= 3):
        return None
    args = stmt.iter.args
    if len(args) == 3 and not (isinstance(args[2], ast.Constant) and args[2].value == 1):
        return None
    start, bound = (ast.Constant(value=0), args[0]) if len(args) == 1 else (args[0], args[1])
    if stmt.target.id in all_names(start) | all_names(bound):
        return None
    return stmt.target.id, start, bound


def _accumulation(stmt: ast.stmt) -> tuple[str, str, ast.expr] | None:
    """``(name, kind, E)`` for ``A += E`` / ``A = tl.maximum(A, E)`` / ``tl.minimum(A, E)``."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and isinstance(stmt.target, ast.Name):
        return stmt.target.id, "sum", stmt.value
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
            and isinstance(stmt.value, ast.Call) and _call_name(stmt.value) in _ACCUMULATE \
            and len(stmt.value.args) == 2 and not stmt.value.keywords:
        name = stmt.targets[0].id
        a, b = stmt.value.args
        if isinstance(a, ast.Name) and a.id == name:
            return name, _call_name(stmt.value), b
        if isinstance(b, ast.Name) and b.id == name:
            return name, _call_name(stmt.value), a
    return None


def _vector_init(body: list[ast.stmt], upto: int, name: str) -> bool:
    """The last assignment to *name* before statement *upto* is ``tl.zeros(...)`` / ``tl.full(...)``."""
    for stmt in reversed(body[:upto]):
        if name in stored_names(stmt):
            return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and is_call_to(stmt.value, "zeros", "full")
    return False


def _check_body(fn: ast.FunctionDef, at: int, loop: ast.For,
                index: str) -> tuple[dict[int, tuple[str, str, ast.expr]], set[str]]:
    """Accumulator updates of *loop* by statement position and the names that depend on the loop
    index; Skip when the loop is not recognised."""
    accs: dict[int, tuple[str, str, ast.expr]] = {}
    depends, assigned = {index}, set()
    for i, stmt in enumerate(loop.body):
        for node in ast.walk(stmt):
            if isinstance(node, (ast.For, ast.While, ast.If, ast.With, ast.Return, ast.IfExp)):
                raise Skip(f"the loop over {index} has control flow")
            if isinstance(node, ast.Subscript):
                raise Skip(f"the loop over {index} indexes a tensor (a 2-D tile or a slice)")
            if isinstance(node, ast.Call):
                name = _call_name(node)
                if name in _REFUSED or name in _REDUCTIONS:
                    raise Skip(f"the loop over {index} calls tl.{name}")
        acc = _accumulation(stmt)
        if acc is not None:
            name, kind, value = acc
            if name in loaded_names(value) or name in assigned:
                raise Skip(f"accumulator {name} is read or assigned elsewhere in the loop over {index}")
            if not _vector_init(fn.body, at, name):
                raise Skip(f"accumulator {name} is not initialised by tl.zeros/tl.full before the loop")
            accs[i] = acc
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _call_name(stmt.value) == "store":
            pointer = _arg(stmt.value, 0, "pointer")
            if pointer is None or not loaded_names(pointer) & depends:
                raise Skip(f"a store in the loop over {index} writes the same place on every trip")
            continue
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            raise Skip(f"the loop over {index} has a statement other than assignments, accumulations and stores")
        target = stmt.targets[0].id
        if target == index:
            raise Skip(f"the loop reassigns its index {index}")
        if loaded_names(stmt.value) & depends:
            depends.add(target)
        assigned.add(target)
    acc_names = {a[0] for a in accs.values()}
    for i, stmt in enumerate(loop.body):       # values carried from one trip to the next
        earlier = set().union(*(stored_names(s) for s in loop.body[:i])) if i else set()
        later = set().union(*(stored_names(s) for s in loop.body[i:]))
        carried = (loaded_names(stmt) - earlier) & later - acc_names
        if i in accs:
            carried -= {accs[i][0]}
        if carried:
            raise Skip(f"the loop over {index} carries {', '.join(sorted(carried))} from one trip to the next")
    leaked = _reads_before_write(fn.body[at + 1:], assigned | {index}) - acc_names
    if leaked:
        raise Skip(f"{', '.join(sorted(leaked))} from the last trip over {index} is read after the loop")
    if not accs and not any(isinstance(s, ast.Expr) for s in loop.body):
        raise Skip(f"the loop over {index} neither accumulates nor stores")
    return accs, depends


def _masked(call: ast.Call, index: int, mask_name: str) -> None:
    """AND the loop's bound mask into a load's or store's mask."""
    mask = _arg(call, index, "mask")
    extra = ast.Name(id=mask_name, ctx=ast.Load())
    _set_arg(call, index, "mask", extra if mask is None else ast.BinOp(left=mask, op=ast.BitAnd(), right=extra))


def _rewrite(loop: ast.For, accs: dict, depends: set[str], start: ast.expr, bound: ast.expr, block: str,
             names: tuple[str, str]) -> None:
    index = loop.target.id
    first, mask_name = names
    loop.target = ast.Name(id=first, ctx=ast.Store())
    loop.iter = template_expr("range(A, N, B)", A=start, N=bound, B=block)
    head = template("I = F + tl.arange(0, B)[:, None]\nM = I < N", I=index, F=first, B=block, M=mask_name,
                    N=bound)
    body = []
    for i, stmt in enumerate(loop.body):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and _call_name(node) in ("load", "store"):
                pointer = _arg(node, 0, "pointer")
                if pointer is not None and loaded_names(pointer) & depends:
                    _masked(node, 1 if _call_name(node) == "load" else 2, mask_name)
        if i in accs:
            name, kind, value = accs[i]
            if kind == "sum":
                (stmt,) = template("A += tl.sum(tl.where(M, E, 0), axis=0)", A=name, M=mask_name, E=value)
            else:
                red, identity = _ACCUMULATE[kind]
                (stmt,) = template(f"A = tl.{kind}(A, tl.{red}(tl.where(M, E, {identity}), axis=0))",
                                   A=name, M=mask_name, E=value)
        body.append(stmt)
    loop.body = head + body


def vectorize_loop(ctx: OpContext) -> Edit:
    """Unit-step loops of a launched kernel become block loops over BLOCK_R indices on a tile axis."""
    tree = ctx.module.clone()
    if PARAM in read_params(tree):
        raise Skip(f"PARAMS already has {PARAM}")
    reasons = []
    for name, fn in launched_kernels(tree).items():
        if uses_dot(fn):
            reasons.append(f"{name} uses tl.dot")
            continue
        found = [(i, s, _unit_loop(s)) for i, s in enumerate(fn.body)]
        found = [(i, s, u) for i, s, u in found if u is not None]
        if not found:
            reasons.append(f"{name} has no top-level unit-step loop")
            continue
        try:
            checked = [(s, u, _check_body(fn, i, s, u[0])) for i, s, u in found]
            launch_calls_in_launch(tree, name)
        except Skip as exc:
            reasons.append(f"{name}: {exc}")
            continue
        taken = all_names(tree)
        index = checked[0][1][0]
        start_name = fresh_name(taken, f"{index}_start")
        names = (start_name, fresh_name(taken | {start_name}, f"{index}_mask"))   # shared by the loops: once
        for loop, (_, start, bound), (accs, depends) in checked:                 # peeled, their heads coincide
            _rewrite(loop, accs, depends, start, bound, PARAM, names)
        add_template_param(tree, name, PARAM, list(ROW_BLOCKS))
        write_params(tree, fit_space(read_params(tree), PARAM, ctx.rng))
        loops = ", ".join(u[0] for _, u, _ in checked)
        return Edit(tree, f"{name}: unit-step loop(s) over {loops} vectorised into blocks of {PARAM} in "
                          f"{ROW_BLOCKS} indices on a leading tile axis (loads and stores masked by the bound)")
    raise Skip("; ".join(reasons) or "no launched kernel")


OPERATORS = (Operator("vectorize_loop", "mutate", 2.0, vectorize_loop),)
