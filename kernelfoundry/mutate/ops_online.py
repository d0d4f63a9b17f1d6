"""Online softmax: fuse a max pass and an exp-sum pass over the same blocks into one
loop that keeps a running max and a rescaled running sum (Milakov & Gimelshein,
"Online normalizer calculation for softmax", 2018).

Recognised shape (in any statement list of a launched kernel; 1-D reductions)::

    A = <-inf init>                      # vector or scalar running max
    for v in R:  P;  A = tl.maximum(A, X)        # or tl.maximum(A, tl.max(X, axis=0))
    m = tl.max(A, axis=0)                # only for a vector A
    S = <zero init>
    for v in R:  P;  S += tl.exp(X - m)          # or S += tl.sum(tl.exp(X - m), axis=0)
    s = tl.sum(S, axis=0)                # only for a vector S

with the same loop header ``R`` and the same prelude ``P``.  Becomes::

    m = -inf; s = 0
    for v in R:
        P
        m_new = tl.maximum(m, tl.max(X, axis=0))
        m_safe = tl.where(m_new == -inf, 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(X - m_safe), axis=0)
        m = m_new

Later passes that use ``m`` and ``s`` are left as they are.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .ast_module import (Skip, all_names, fresh_name, is_call_to, launched_kernels, same,
                         statement_lists, template)
from .ops_base import Edit, OpContext, Operator


def _reduced(expr: ast.expr, fname: str) -> ast.expr | None:
    """X for ``tl.<fname>(X)``, ``tl.<fname>(X, 0)`` or ``tl.<fname>(X, axis=0)``."""
    if not is_call_to(expr, fname) or not expr.args:
        return None
    axes = list(expr.args[1:]) + [k.value for k in expr.keywords if k.arg == "axis"]
    if any(k.arg not in ("axis", "keep_dims") for k in expr.keywords):
        return None
    if len(axes) > 1 or (axes and not (isinstance(axes[0], ast.Constant) and axes[0].value in (0, None))):
        return None
    return expr.args[0]


def _assign(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id, stmt.value
    return None


def _max_update(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """(A, E) for ``A = tl.maximum(A, E)`` / ``tl.maximum(E, A)``."""
    a = _assign(stmt)
    if not a or not is_call_to(a[1], "maximum") or len(a[1].args) != 2:
        return None
    acc, (x, y) = a[0], a[1].args
    if isinstance(x, ast.Name) and x.id == acc:
        return acc, y
    if isinstance(y, ast.Name) and y.id == acc:
        return acc, x
    return None


def _sum_update(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """(S, F) for ``S += F`` / ``S = S + F`` / ``S = F + S``."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and isinstance(stmt.target, ast.Name):
        return stmt.target.id, stmt.value
    a = _assign(stmt)
    if a and isinstance(a[1], ast.BinOp) and isinstance(a[1].op, ast.Add):
        acc, l, r = a[0], a[1].left, a[1].right
        if isinstance(l, ast.Name) and l.id == acc:
            return acc, r
        if isinstance(r, ast.Name) and r.id == acc:
            return acc, l
    return None


def _exp_shift(expr: ast.expr, x: str, m: str) -> bool:
    """True for ``tl.exp(x - m)``."""
    return (is_call_to(expr, "exp") and len(expr.args) == 1 and isinstance(expr.args[0], ast.BinOp)
            and isinstance(expr.args[0].op, ast.Sub) and isinstance(expr.args[0].left, ast.Name)
            and expr.args[0].left.id == x and isinstance(expr.args[0].right, ast.Name)
            and expr.args[0].right.id == m)


def _constant(expr: ast.expr) -> float | None:
    """The float value of ``1.0``, ``-x``, ``float("-inf")``, ``-float("inf")``, ``math.inf``."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool):
        return float(expr.value)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        v = _constant(expr.operand)
        return None if v is None else -v
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "float" \
            and len(expr.args) == 1 and isinstance(expr.args[0], ast.Constant) and isinstance(expr.args[0].value, str):
        try:
            return float(expr.args[0].value)
        except ValueError:
            return None
    if isinstance(expr, ast.Attribute) and expr.attr == "inf":
        return float("inf")
    return None


def _fill_value(expr: ast.expr) -> float | None:
    """The fill of an init: a constant, ``tl.full(shape, v, ...)`` or ``tl.zeros(...)``."""
    if is_call_to(expr, "zeros"):
        return 0.0
    if is_call_to(expr, "full"):
        args = list(expr.args) + [k.value for k in expr.keywords if k.arg == "value"]
        return _constant(args[1]) if len(args) >= 2 else None
    return _constant(expr)


@dataclass
class SoftmaxPasses:
    body: list[ast.stmt]
    loop1: int
    loop2: int
    remove: tuple[int, ...]   # init / reduction statements that go away
    x: str
    m: str
    s: str
    inline_sums: list[ast.Call]   # later ``tl.sum(S)`` calls that become ``s``


def _last_assign_before(body: list[ast.stmt], name: str, end: int) -> int | None:
    for i in range(end - 1, -1, -1):
        a = _assign(body[i])
        if a and a[0] == name:
            return i
    return None


def _loads(nodes: list[ast.AST], name: str) -> int:
    return sum(1 for s in nodes for n in ast.walk(s)
               if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load))


def find_softmax_passes(fn: ast.FunctionDef) -> SoftmaxPasses | None:
    for body in statement_lists(fn):
        for i, loop1 in enumerate(body):
            found = _match_at(fn, body, i)
            if found:
                return found
    return None


def _match_at(fn: ast.FunctionDef, body: list[ast.stmt], i: int) -> SoftmaxPasses | None:
    loop1 = body[i]
    if not isinstance(loop1, ast.For) or loop1.orelse or not loop1.body:
        return None
    upd = _max_update(loop1.body[-1])
    if not upd:
        return None
    acc_max, e = upd
    k = i + 1
    inner = _reduced(e, "max")
    if isinstance(e, ast.Name):                 # vector running max, reduced after the loop
        red = _assign(body[k]) if k < len(body) else None
        if not red or not same(_reduced(red[1], "max"), ast.Name(id=acc_max, ctx=ast.Load())):
            return None
        x, m, vector_max = e.id, red[0], True
        k += 1
    elif isinstance(inner, ast.Name):           # scalar running max
        x, m, vector_max = inner.id, acc_max, False
    else:
        return None
    j = next((t for t in range(k, len(body)) if isinstance(body[t], ast.For)), None)
    if j is None:
        return None
    loop2 = body[j]
    if loop2.orelse or not same(loop1.target, loop2.target) or not same(loop1.iter, loop2.iter):
        return None
    if len(loop1.body) != len(loop2.body) or not all(same(a, b) for a, b in zip(loop1.body[:-1], loop2.body[:-1])):
        return None
    su = _sum_update(loop2.body[-1])
    if not su:
        return None
    acc_sum, f = su
    end = j + 1
    inline: list[ast.Call] = []
    if _exp_shift(f, x, m):                     # vector running sum, reduced after the loop
        red = _assign(body[end]) if end < len(body) else None
        acc_ref = ast.Name(id=acc_sum, ctx=ast.Load())
        if red and same(_reduced(red[1], "sum"), acc_ref):
            s, vector_sum = red[0], True
            end += 1
        else:                                   # reduced inside later expressions
            inline = [n for st in body[end:] for n in ast.walk(st)
                      if isinstance(n, ast.Call) and same(_reduced(n, "sum"), acc_ref)]
            if not inline:
                return None
            s, vector_sum = fresh_name(all_names(fn), f"{acc_sum}_total"), True
    elif _reduced(f, "sum") is not None and _exp_shift(_reduced(f, "sum"), x, m):
        s, vector_sum = acc_sum, False
    else:
        return None
    init_max = _last_assign_before(body, acc_max, i)
    init_sum = _last_assign_before(body, acc_sum, j)
    if init_max is None or init_sum is None or len({acc_max, acc_sum, x}) < 3 or len({m, s, x}) < 3:
        return None
    fill_max, fill_sum = _fill_value(_assign(body[init_max])[1]), _fill_value(_assign(body[init_sum])[1])
    if fill_max is None or fill_max > -1e30 or fill_sum != 0.0:
        return None
    if any(t != init_sum for t in range(k, j)):   # nothing else may run between the passes
        return None
    if _loads(body[init_max + 1:i], acc_max) or _loads(body[init_sum + 1:j], acc_sum):
        return None
    prelude = loop1.body[:-1]
    if any(_loads(prelude, name) for name in {acc_max, acc_sum, m, s}):
        return None
    red_max = [body[k - 1]] if vector_max else []
    red_sum = [body[end - 1]] if vector_sum and not inline else inline
    if vector_max and _loads([fn], acc_max) != _loads([loop1.body[-1]] + red_max, acc_max):
        return None
    if vector_sum and _loads([fn], acc_sum) != _loads([loop2.body[-1]] + red_sum, acc_sum):
        return None
    remove = {init_max, init_sum, j} | ({k - 1} if vector_max else set()) \
        | ({end - 1} if vector_sum and not inline else set())
    return SoftmaxPasses(body, i, j, tuple(sorted(remove)), x, m, s, inline)


class _ReplaceNodes(ast.NodeTransformer):
    def __init__(self, ids: set[int], name: str):
        self.ids, self.name = ids, name

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if id(node) in self.ids:
            return ast.copy_location(ast.Name(id=self.name, ctx=ast.Load()), node)
        return self.generic_visit(node)


def online_softmax(ctx: OpContext) -> Edit:
    """Fuse the max and exp-sum passes of a softmax-style kernel into one online pass."""
    tree = ctx.module.clone()
    for name, fn in launched_kernels(tree).items():
        found = find_softmax_passes(fn)
        if found is None:
            continue
        taken = all_names(tree)
        new_max, safe_max = fresh_name(taken, f"{found.m}_new"), fresh_name(taken, f"{found.m}_safe")
        body = found.body
        loop1 = body[found.loop1]
        update = template(
            "NEW = tl.maximum(M, tl.max(X, axis=0))\n"
            "SAFE = tl.where(NEW == float('-inf'), 0.0, NEW)\n"
            "S = S * tl.exp(M - SAFE) + tl.sum(tl.exp(X - SAFE), axis=0)\n"
            "M = NEW\n", NEW=new_max, SAFE=safe_max, M=found.m, S=found.s, X=found.x)
        fused = ast.For(target=loop1.target, iter=loop1.iter, body=loop1.body[:-1] + update,
                        orelse=[], type_comment=None)
        inits = template("M = tl.full([], float('-inf'), dtype=tl.float32)\n"
                         "S = tl.full([], 0.0, dtype=tl.float32)\n", M=found.m, S=found.s)
        new_body = []
        for t, stmt in enumerate(body):
            if t == found.loop1:
                new_body += inits + [fused]
            elif t not in found.remove:
                new_body.append(stmt)
        body[:] = new_body
        if found.inline_sums:
            _ReplaceNodes({id(c) for c in found.inline_sums}, found.s).visit(fn)
        return Edit(tree, f"{name}: fused max and sum passes into one online-softmax pass "
                          f"(running max {found.m}, rescaled sum {found.s})")
    raise Skip("no softmax-style max pass followed by an exp-sum pass over the same blocks")


OPERATORS = (Operator("online_softmax", "mutate", 5.0, online_softmax),)
