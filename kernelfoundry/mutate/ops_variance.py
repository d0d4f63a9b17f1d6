"""One-pass variance: fuse a mean pass and a centred sum-of-squares pass over the same
blocks into one pass of shifted sums (the "shifted data" algorithm).

Recognised shape (in any statement list of a launched kernel)::

    A = <zero init>
    for v in R:  P1;  A += X                     # or A += tl.sum(X, axis=0) (scalar A)
    M = tl.sum(A, axis=0) / N                    # or A / N; N the loops' bound
    B = <zero init>                              # other statements may sit between the loops
    for v in R:  P2;  D = tl.where(C, x - M, 0.0);  B += D * D      # or tl.sum(D * D, axis=0)

where ``x`` is ``tl.load(..., mask=C, other=0)`` (maybe cast with ``.to``) and ``X``
is the same expression, so both passes see the same values.  Becomes::

    <first block of P2 and x>;  K = mean of the first block's valid x     # the shift
    A' = 0; B = 0
    for v in R:  P2;  D = tl.where(C, x - K, 0.0);  B += D * D;  A' += D
    M = K + tl.sum(A') / N
    ... tl.sum(B, axis=0) after the loop reads tl.maximum(tl.sum(B) - s1 * (s1 / N), 0.0)

since sum (x - M)^2 = sum (x - K)^2 - (sum (x - K))^2 / N.  With K close to the row's
mean (the first block's mean) the subtraction loses little (no E[x^2] - E[x]^2 about
zero).  One read of the row fewer.
"""

from __future__ import annotations

import ast
import copy

from .ast_loops import block_loop
from .ast_module import (Skip, all_names, fresh_name, is_call_to, is_constexpr_arg, launched_kernels,
                         loaded_names, same, statement_lists, stored_names, template)
from .ops_base import Edit, OpContext, Operator
from .ops_online import _assign, _fill_value, _reduced, _sum_update
from .ops_split import _effects, _reads_before_write


class _Inline(ast.NodeTransformer):
    def __init__(self, defs: dict[str, ast.expr], rename: dict[str, str]):
        self.defs, self.rename = defs, rename

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.defs:
            return self.visit(copy.deepcopy(self.defs[node.id]))
        if node.id in self.rename:
            return ast.copy_location(ast.Name(id=self.rename[node.id], ctx=node.ctx), node)
        return node


def _resolved(expr: ast.expr, loop: ast.For, upto: int, target: str) -> ast.expr:
    """*expr* with the loop's single-assignment temporaries before ``loop.body[upto]``
    inlined and the loop variable renamed to *target*."""
    defs: dict[str, ast.expr] = {}
    for stmt in loop.body[:upto]:
        a = _assign(stmt)
        if a:
            defs[a[0]] = a[1]
    counts = {n: sum(1 for s in loop.body if n in stored_names(s)) for n in defs}
    defs = {n: e for n, e in defs.items() if counts[n] == 1}
    return _Inline(defs, {loop.target.id: target}).visit(copy.deepcopy(expr))


def _load_mask(expr: ast.expr) -> ast.expr | None:
    """C for ``tl.load(p, mask=C, other=0)`` (maybe cast with ``.to(...)``), else None."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "to":
        expr = expr.func.value
    if not is_call_to(expr, "load"):
        return None
    kw = {k.arg: k.value for k in expr.keywords}
    other = kw.get("other", expr.args[2] if len(expr.args) > 2 else None)
    mask = kw.get("mask", expr.args[1] if len(expr.args) > 1 else None)
    if mask is None or other is None or _fill_value(other) != 0.0:
        return None
    return mask


def _where_deviation(expr: ast.expr, m: str) -> tuple[ast.expr, ast.expr] | None:
    """(C, x) for ``tl.where(C, x - m, 0.0)``."""
    if not is_call_to(expr, "where") or len(expr.args) != 3 or expr.keywords or _fill_value(expr.args[2]) != 0.0:
        return None
    diff = expr.args[1]
    if isinstance(diff, ast.BinOp) and isinstance(diff.op, ast.Sub) and isinstance(diff.right, ast.Name) \
            and diff.right.id == m:
        return expr.args[0], diff.left
    return None


def _square_sum(update: ast.expr) -> tuple[str, bool] | None:
    """(D, vector) for ``D * D`` (vector) or ``tl.sum(D * D, axis=0)`` (scalar)."""
    inner, vector = _reduced(update, "sum"), False
    if inner is None:
        inner, vector = update, True
    if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Mult) and isinstance(inner.left, ast.Name) \
            and same(inner.left, inner.right):
        return inner.left.id, vector
    return None


def _bound(fn: ast.FunctionDef, loop: ast.For) -> str | None:
    for a in fn.args.args:
        if is_constexpr_arg(a):
            n = block_loop(loop, a.arg)
            if n is not None:
                return n
    return None


def _match(fn: ast.FunctionDef, body: list[ast.stmt], i: int) -> dict | None:
    """The mean pass at ``body[i]`` followed by a centred sum-of-squares pass, or None."""
    loop1 = body[i]
    n = _bound(fn, loop1) if isinstance(loop1, ast.For) else None
    if n is None or _effects(loop1) or not loop1.body:
        return None
    upd1 = _sum_update(loop1.body[-1])
    if not upd1:
        return None
    acc_a, x1 = upd1
    a_scalar = _reduced(x1, "sum") is not None
    if a_scalar:
        x1 = _reduced(x1, "sum")
    j = next((t for t in range(i + 1, len(body)) if isinstance(body[t], ast.For)), None)
    if j is None:
        return None
    loop2 = body[j]
    if not same(loop1.iter, loop2.iter) or _effects(loop2) or len(loop2.body) < 2:
        return None
    upd2 = _sum_update(loop2.body[-1])
    sq = _square_sum(upd2[1]) if upd2 else None
    if not sq:
        return None
    acc_b, (d_name, b_vector) = upd2[0], sq
    d_at = next((t for t, s in enumerate(loop2.body[:-1]) if d_name in stored_names(s)), None)
    d_def = _assign(loop2.body[d_at]) if d_at is not None else None
    mean_at = next((t for t in range(i + 1, j) if _assign(body[t])), None)
    if d_def is None or d_def[0] != d_name or mean_at is None:
        return None
    m, m_value = _assign(body[mean_at])
    reduced_a = m_value.left if isinstance(m_value, ast.BinOp) and isinstance(m_value.op, ast.Div) else None
    if reduced_a is None or not (isinstance(m_value.right, ast.Name) and m_value.right.id == n):
        return None
    a_ref = ast.Name(id=acc_a, ctx=ast.Load())
    if not (same(reduced_a, a_ref) if a_scalar else same(_reduced(reduced_a, "sum"), a_ref)):
        return None
    dev = _where_deviation(d_def[1], m)
    if dev is None:
        raise Skip(f"{fn.name}: the deviations {d_name} from {m} are not masked as tl.where(mask, x - {m}, 0.0)")
    cond, x2 = dev
    target = loop2.target.id
    x2_full = _resolved(x2, loop2, d_at, target)
    mask = _load_mask(x2_full)
    if mask is None or not same(mask, _resolved(cond, loop2, d_at, target)):
        raise Skip(f"{fn.name}: the centred pass does not read x with tl.load(mask=..., other=0) under the same mask")
    if not same(_resolved(x1, loop1, len(loop1.body) - 1, target), x2_full):
        raise Skip(f"{fn.name}: the mean pass and the centred pass do not read the same values")
    # only A and B are carried, loop temporaries are not read after their loop
    for loop, acc, end in ((loop1, acc_a, i), (loop2, acc_b, j)):
        assigned = stored_names(loop) - {loop.target.id}
        if _reads_before_write(loop.body, assigned, {loop.target.id}) != {acc} \
                or _reads_before_write(body[end + 1:], assigned - {acc}):
            return None
    init_a = next((t for t in range(i - 1, -1, -1) if acc_a in stored_names(body[t])), None)
    init_b = next((t for t in range(j - 1, -1, -1) if acc_b in stored_names(body[t])), None)
    for init, acc in ((init_a, acc_a), (init_b, acc_b)):
        a = _assign(body[init]) if init is not None else None
        if a is None or a[0] != acc or _fill_value(a[1]) != 0.0:
            return None
    a_end = next((t for t in range(i + 1, len(body)) if acc_a in stored_names(body[t])), len(body))
    if any(acc_a in loaded_names(body[t]) for t in range(init_a + 1, a_end) if t not in (i, mean_at)) \
            or (a_end < len(body) and a_end != init_b):
        return None
    between = [t for t in range(i + 1, j) if t not in (mean_at, init_b)]
    if any({m, acc_a} & loaded_names(body[t]) or {m, acc_a, acc_b} & stored_names(body[t]) for t in between):
        return None
    if any(loaded_names(x2_full) & stored_names(body[t]) for t in between):   # both passes read the same data
        return None
    if sum(1 for s in loop2.body for nd in ast.walk(s) if isinstance(nd, ast.Name) and nd.id == m) != 1:
        return None
    scope = []
    for t in range(j + 1, len(body)):
        if acc_b in stored_names(body[t]):
            break
        scope.append(t)
    b_ref = ast.Name(id=acc_b, ctx=ast.Load())
    uses = sum(1 for t in scope for nd in ast.walk(body[t]) if isinstance(nd, ast.Name) and nd.id == acc_b)
    sums = sum(1 for t in scope for c in ast.walk(body[t]) if isinstance(c, ast.Call) and same(_reduced(c, "sum"), b_ref))
    if b_vector and sums != uses:
        return None
    return dict(i=i, j=j, mean_at=mean_at, init_a=init_a, init_b=init_b, scope=scope,
                acc_b=acc_b, b_vector=b_vector, m=m, n=n, d_at=d_at, d_name=d_name, cond=cond, x2=x2)


class _ReplaceSum(ast.NodeTransformer):
    def __init__(self, acc: str, vector: bool, name: str):
        self.acc, self.vector, self.name = acc, vector, name

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if self.vector and same(_reduced(node, "sum"), ast.Name(id=self.acc, ctx=ast.Load())):
            return ast.copy_location(ast.Name(id=self.name, ctx=ast.Load()), node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if not self.vector and node.id == self.acc and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Name(id=self.name, ctx=ast.Load()), node)
        return node


def _rewrite(body: list[ast.stmt], f: dict, taken: set[str]) -> None:
    loop2 = body[f["j"]]
    target = loop2.target.id
    shift = fresh_name(taken, f"{f['m']}_shift")
    s1_acc, s1 = fresh_name(taken, f"{f['d_name']}_sum"), fresh_name(taken, f"{f['d_name']}_total")
    centred = fresh_name(taken, f"{f['acc_b']}_centred")
    # the first block: the loop body up to D with the loop variable at 0, its names made fresh
    head = loop2.body[:f["d_at"]]
    local = sorted({target} | {n for s in head for n in stored_names(s)})
    rename = {n: fresh_name(taken, f"{n}_first") for n in local}
    inline = _Inline({}, rename)
    first = template("V = 0", V=rename[target]) + [inline.visit(copy.deepcopy(s)) for s in head]
    first += template("K = tl.sum(tl.where(C, X, 0.0), axis=0) / tl.maximum(tl.sum(tl.where(C, 1.0, 0.0), axis=0), 1.0)",
                      K=shift, C=inline.visit(copy.deepcopy(f["cond"])), X=inline.visit(copy.deepcopy(f["x2"])))
    # the fused loop: deviations from the shift, their sum kept beside the sum of their squares
    loop2.body[f["d_at"]] = _Inline({}, {f["m"]: shift}).visit(loop2.body[f["d_at"]])
    loop2.body += template("S += D" if f["b_vector"] else "S += tl.sum(D, axis=0)", S=s1_acc, D=f["d_name"])
    s1_init = ast.Assign(targets=[ast.Name(id=s1_acc, ctx=ast.Store())],
                         value=copy.deepcopy(body[f["init_b"]].value), lineno=0)
    b_sum = "tl.sum(B, axis=0)" if f["b_vector"] else "B"
    after = template(f"T = {'tl.sum(S, axis=0)' if f['b_vector'] else 'S'}\n"
                     "M = K + T / N\n"
                     f"C = tl.maximum({b_sum} - T * (T / N), 0.0)\n",
                     T=s1, S=s1_acc, M=f["m"], K=shift, N=f["n"], C=centred, B=f["acc_b"])
    for t in f["scope"]:
        body[t] = _ReplaceSum(f["acc_b"], f["b_vector"], centred).visit(body[t])
    out = []
    for t, stmt in enumerate(body):
        if t == f["j"]:
            out += first + [s1_init, stmt] + after
        elif t not in (f["i"], f["mean_at"], f["init_a"]):
            out.append(stmt)
    body[:] = out


def one_pass_variance(ctx: OpContext) -> Edit:
    """Fuse a mean pass and a centred sum-of-squares pass into one pass of shifted sums."""
    tree = ctx.module.clone()
    reasons = []
    for name, fn in launched_kernels(tree).items():
        for body in statement_lists(fn):
            for i in range(len(body)):
                try:
                    found = _match(fn, body, i)
                except Skip as exc:
                    reasons.append(str(exc))
                    continue
                if found:
                    _rewrite(body, found, all_names(tree))
                    return Edit(tree, f"{name}: mean pass and centred sum-of-squares pass fused into one pass of "
                                      f"sums shifted by the first block's mean ({found['m']} from the shifted sum)")
    raise Skip("; ".join(reasons) or "no mean pass followed by a centred sum-of-squares pass over the same blocks")


OPERATORS = (Operator("one_pass_variance", "mutate", 4.0, one_pass_variance),)
