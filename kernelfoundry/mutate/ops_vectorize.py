"""Vectorise a unit-step loop: ``for f in range(A, N)`` walks a strided axis one scalar index at a
time (a reduction over channels, written as one load of a row of the fast axis per ``f``).

Each such top-level loop of a launched kernel becomes a block loop over ``BLOCK_R`` indices at
once, held on a new leading tile axis::

    for f_start in range(A, N, BLOCK_R):
        f = f_start + tl.arange(0, BLOCK_R)[:, None]      # [BLOCK_R, 1]: broadcasts against
        f_mask = f < N                                      #   the kernel's 1-D vectors
        x = tl.load(..., mask=<mask> & f_mask, ...)         # a [BLOCK_R, BLOCK] tile
        acc += tl.sum(tl.where(f_mask, E, 0).to(acc.dtype), axis=0)        # sums, in acc's type
        acc = tl.maximum(acc, tl.max(tl.where(f_mask, E, acc), axis=0))    # max (min alike)
        tl.store(..., mask=<mask> & f_mask)

so each load moves BLOCK_R rows of the fast axis in one instruction.  Where one block covers the
axis, ``whole_row`` then peels the loops and drops the repeated loads: the tile is read once.

The trips of a block run at once, so the loop must not depend on their order.  Recognised body:
assignments to names, one update per accumulator (``A += E``, ``A = tl.maximum(A, E)``,
``tl.minimum``) initialised with ``tl.zeros`` / ``tl.full`` before the loop and appearing nowhere
else in it, and ``tl.store`` calls at ``P + f * S + ...`` (one place per index) through pointers
that no load of the loop reads elsewhere.  Skipped with a reason: kernels with 2-D tensors or shape
ops, control flow, reductions, scans or calls of non-``tl`` functions in the loop, constant masks,
values carried from one trip to the next, names the ``range`` reads assigned in the loop, and
values of the last trip read after the loop.
"""

from __future__ import annotations

import ast

from .ast_module import (Skip, all_names, fresh_name, is_call_to, is_constexpr_arg, launched_kernels, loaded_names, read_params,
                         stored_names, template, template_expr, uses_dot, write_params)
from .ast_signature import add_template_param, launch_calls_in_launch
from .ops_base import Edit, OpContext, Operator, fit_space
from .ops_split import _reads_before_write
from .ops_tile2d import _REDUCTIONS, _REFUSED, _arg, _call_name, _is_module_call, _set_arg

#: Indices per block; the first is the default.
ROW_BLOCKS = [16, 32, 64]
PARAM = "BLOCK_R"

_ACCUMULATE = {"maximum": "max", "minimum": "min"}


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


_SHAPE_OPS = ("dot", "trans", "permute", "reshape", "view", "broadcast_to", "broadcast", "expand_dims", "join",
              "split", "interleave")
_BUILTINS = ("float", "int")


def _one_d(fn: ast.FunctionDef) -> None:
    """Skip unless *fn* works on 1-D vectors only (the new axis goes in front of them)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript):
            raise Skip(f"{fn.name} already indexes tensors (a 2-D tile or a slice)")
        if isinstance(node, ast.Call) and _call_name(node) in _SHAPE_OPS:
            raise Skip(f"{fn.name} calls tl.{_call_name(node)}")
        if isinstance(node, ast.Call) and is_call_to(node, "zeros", "full"):
            shape = _arg(node, 0, "shape")
            if not (isinstance(shape, (ast.List, ast.Tuple)) and len(shape.elts) <= 1):
                raise Skip(f"{fn.name} builds a tensor that is not 1-D")


def _single_defs(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """Names assigned exactly once in *body* (nested statements included) by a plain assignment."""
    counts: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for node in (n for s in body for n in ast.walk(s)):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = node.value
    return {k: v for k, v in values.items() if counts.get(k) == 1}


def _terms(expr: ast.expr, defs: dict[str, ast.expr], depth: int = 0) -> list[ast.expr]:
    """The terms of an address ``a + b + ...``, names assigned once expanded into their terms."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _terms(expr.left, defs, depth) + _terms(expr.right, defs, depth)
    if isinstance(expr, ast.Name) and expr.id in defs and depth < 16:
        return _terms(defs[expr.id], defs, depth + 1)
    return [expr]


def _factors(expr: ast.expr) -> list[ast.expr]:
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        return _factors(expr.left) + _factors(expr.right)
    return [expr]


def _index_term(term: ast.expr, index: str, depends: set[str]) -> bool:
    """*term* is ``index`` times factors that do not depend on it."""
    factors = _factors(term)
    hits = [f for f in factors if isinstance(f, ast.Name) and f.id == index]
    return len(hits) == 1 and not any(all_names(f) & depends for f in factors if f is not hits[0])


def _check_memory(fn: ast.FunctionDef, loop: ast.For, index: str, depends: set[str]) -> None:
    """Stores write one place per index (``P + f * S + ...``) through pointers no load of the loop
    reads elsewhere: the trips of a block run at once, so no trip may read what another wrote."""
    defs = _single_defs(fn.body)
    pointers = {a.arg for a in fn.args.args if not is_constexpr_arg(a)}
    accesses = []
    for node in (n for s in loop.body for n in ast.walk(s)):
        if isinstance(node, ast.Call) and _call_name(node) in ("load", "store"):
            address = _arg(node, 0, "pointer")
            if address is None:
                raise Skip(f"a {_call_name(node)} in the loop over {index} has no address")
            terms = _terms(address, defs)
            bases = {t.id for t in terms if isinstance(t, ast.Name) and t.id in pointers}
            accesses.append((_call_name(node), address, terms, bases))
    for kind, address, terms, bases in accesses:
        if kind != "store":
            continue
        if not bases:
            raise Skip(f"a store address in the loop over {index} has no pointer argument as a term")
        strided = [t for t in terms if _index_term(t, index, depends)]
        rest = [t for t in terms if not _index_term(t, index, depends)]
        if len(strided) != 1 or any(all_names(t) & depends for t in rest):
            raise Skip(f"a store in the loop over {index} is not at P + {index} * S + ... (one place per index)")
        for other_kind, other, _, other_bases in accesses:
            if other_kind == "load" and bases & other_bases and ast.dump(other) != ast.dump(address):
                raise Skip(f"the loop over {index} loads through {', '.join(sorted(bases & other_bases))} "
                           f"elsewhere than it stores")


def _check_body(fn: ast.FunctionDef, at: int, loop: ast.For, index: str,
                bound_names: set[str]) -> tuple[dict[int, tuple[str, str, ast.expr]], set[str]]:
    """Accumulator updates of *loop* by statement position and the names that depend on the loop
    index; Skip when the loop is not recognised."""
    accs: dict[int, tuple[str, str, ast.expr]] = {}
    depends, assigned = {index}, set()
    for i, stmt in enumerate(loop.body):
        for node in ast.walk(stmt):
            if isinstance(node, (ast.For, ast.While, ast.If, ast.With, ast.Return, ast.IfExp)):
                raise Skip(f"the loop over {index} has control flow")
            if isinstance(node, ast.Call):
                name = _call_name(node)
                if name in _REFUSED or name in _REDUCTIONS:
                    raise Skip(f"the loop over {index} calls tl.{name}")
                if not (_is_module_call(node) or name in _BUILTINS and isinstance(node.func, ast.Name)
                        or name == "to" and isinstance(node.func, ast.Attribute)):
                    raise Skip(f"the loop over {index} calls {name or 'a function'} (only tl functions are "
                               f"checked)")
            if isinstance(node, ast.keyword) and node.arg == "mask" and isinstance(node.value, ast.Constant):
                raise Skip(f"a load or store in the loop over {index} passes a constant mask")
        acc = _accumulation(stmt)
        if acc is not None:
            name, kind, value = acc
            if name in loaded_names(value):
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
    for name in acc_names:                     # an accumulator appears in its own update only
        uses = [s for s in loop.body if name in all_names(s)]
        if len(uses) != 1:
            raise Skip(f"accumulator {name} is read or assigned elsewhere in the loop over {index}")
    for i, stmt in enumerate(loop.body):       # values carried from one trip to the next
        earlier = set().union(*(stored_names(s) for s in loop.body[:i])) if i else set()
        later = set().union(*(stored_names(s) for s in loop.body[i:]))
        carried = (loaded_names(stmt) - earlier) & later - acc_names
        if i in accs:
            carried -= {accs[i][0]}
        if carried:
            raise Skip(f"the loop over {index} carries {', '.join(sorted(carried))} from one trip to the next")
    if (assigned | acc_names) & bound_names:
        raise Skip(f"the loop over {index} assigns {', '.join(sorted((assigned | acc_names) & bound_names))}, "
                   f"which its range reads")
    leaked = _reads_before_write(fn.body[at + 1:], assigned | {index}) - acc_names
    if leaked:
        raise Skip(f"{', '.join(sorted(leaked))} from the last trip over {index} is read after the loop")
    if not accs and not any(isinstance(s, ast.Expr) for s in loop.body):
        raise Skip(f"the loop over {index} neither accumulates nor stores")
    _check_memory(fn, loop, index, depends)
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
                # terms converted to the accumulator's type before the block sum, as each was added
                (stmt,) = template("A += tl.sum(tl.where(M, E, 0).to(A.dtype), axis=0)", A=name, M=mask_name, E=value)
            else:                      # padded indices take the accumulator's own value: any dtype
                red = _ACCUMULATE[kind]
                (stmt,) = template(f"A = tl.{kind}(A, tl.{red}(tl.where(M, E, A), axis=0))",
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
            _one_d(fn)
            checked = [(s, u, _check_body(fn, i, s, u[0], all_names(u[1]) | all_names(u[2]))) for i, s, u in found]
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
