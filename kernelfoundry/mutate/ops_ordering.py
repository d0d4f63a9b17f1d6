"""Program-id remapping: row-major tile order -> grouped ("super-grouping") order.

Recognises, in a launched kernel,

* 1-D grids: ``pid_m = pid // num_pid_n`` with ``pid_n = pid % num_pid_n`` (or
  ``pid - pid_m * num_pid_n``), where ``pid = tl.program_id(0)`` (named or inline);
* 2-D grids: ``pid_m = tl.program_id(0)``, ``pid_n = tl.program_id(1)`` with a literal
  ``(cdiv(M, BM), cdiv(N, BN))`` grid (the grid becomes 1-D),

and rewrites the mapping as in Triton's matmul tutorial: ``GROUP_M`` consecutive
tile rows are walked column by column, so programs running together share tiles
of both operands in L2.  ``GROUP_M`` becomes a constexpr, a ``launch`` keyword and
a template parameter.  The mapping stays a bijection onto the same tiles.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .ast_module import (Skip, all_names, arg_names, fresh_name, is_call_to, is_constexpr_arg,
                         launched_kernels, program_id_axis, same, statement_lists, stored_names,
                         template, template_expr)
from .ast_signature import (add_template_param, call_binding, grid_dims, grid_site,
                            launch_calls_in_launch)
from .ops_base import Edit, OpContext, Operator

GROUP_VALUES = [8, 1, 4]


@dataclass
class TileOrder:
    """Where a kernel maps its program id to (outer, inner) tile coordinates."""

    kernel: str
    outer: str                   # e.g. pid_m
    inner: str                   # e.g. pid_n
    stmt_indices: tuple[int, ...]   # top-level body statements that bind outer / inner
    pid: ast.expr | None         # linear program id (1-D) or None (2-D grid)
    n_inner: ast.expr | None     # number of inner tiles (1-D form), kernel side
    body: list[ast.stmt]         # the statement list holding the mapping
    pid_is_program_id: bool = True   # False: a derived linear id (e.g. in a coarsened kernel)


def _assign(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id, stmt.value
    return None


def _store_counts(fn: ast.FunctionDef) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _is_linear_pid(expr: ast.expr, fn: ast.FunctionDef, counts: dict[str, int]) -> bool:
    if program_id_axis(expr) == 0:
        return True
    if isinstance(expr, ast.Name) and counts.get(expr.id) == 1:
        for stmt in fn.body:
            a = _assign(stmt)
            if a and a[0] == expr.id:
                return program_id_axis(a[1]) == 0
    return False


def _is_inner_of(value: ast.expr, pid: ast.expr, div: ast.expr, outer: str) -> bool:
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod):
        return same(value.left, pid) and same(value.right, div)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Sub) and same(value.left, pid):
        r = value.right
        if isinstance(r, ast.BinOp) and isinstance(r.op, ast.Mult):
            pair = [r.left, r.right]
            return any(isinstance(x, ast.Name) and x.id == outer for x in pair) and any(same(x, div) for x in pair)
    return False


def find_linear_order(fn: ast.FunctionDef) -> TileOrder | None:
    """A 1-D row-major mapping in any statement list of *fn*, or None."""
    counts = _store_counts(fn)
    for body in statement_lists(fn):
        found = _linear_order_in(fn, body, counts)
        if found:
            return found
    return None


def _linear_order_in(fn: ast.FunctionDef, body: list[ast.stmt], counts: dict[str, int]) -> TileOrder | None:
    for i, stmt in enumerate(body):
        a = _assign(stmt)
        if not (a and isinstance(a[1], ast.BinOp) and isinstance(a[1].op, ast.FloorDiv)):
            continue
        outer, value = a
        pid, div = value.left, value.right
        direct = _is_linear_pid(pid, fn, counts)
        if counts.get(outer) != 1 or not (direct or isinstance(pid, ast.Name) and counts.get(pid.id) == 1):
            continue
        for j, other in enumerate(body):
            b = _assign(other)
            if j != i and b and counts.get(b[0]) == 1 and _is_inner_of(b[1], pid, div, outer):
                if isinstance(div, ast.Name) and counts.get(div.id) != 1:
                    continue
                return TileOrder(fn.name, outer, b[0], (i, j), pid, div, body, direct)
    return None


def find_2d_order(fn: ast.FunctionDef) -> TileOrder | None:
    """``outer = tl.program_id(0)``, ``inner = tl.program_id(1)`` at top level, or None."""
    counts = _store_counts(fn)
    found: dict[int, tuple[int, str]] = {}
    for i, stmt in enumerate(fn.body):
        a = _assign(stmt)
        if a and program_id_axis(a[1]) in (0, 1) and counts.get(a[0]) == 1:
            found.setdefault(program_id_axis(a[1]), (i, a[0]))
    if 0 not in found or 1 not in found:
        return None
    uses = [n for n in ast.walk(fn) if program_id_axis(n) is not None]
    if len(uses) != 2 or any(is_call_to(n, "num_programs") for n in ast.walk(fn)):
        return None
    return TileOrder(fn.name, found[0][1], found[1][1], (found[0][0], found[1][0]), None, None, fn.body)


class _NameExpressions(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names   # ast.dump of an expression -> name

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        name = self.names.get(ast.dump(node))
        if name is not None:
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        return self.generic_visit(node)


def name_inline_order(fn: ast.FunctionDef, taken: set[str]) -> bool:
    """Turn inline ``(pid // n) * BM`` / ``(pid % n) * BN`` into named ``pid_m`` / ``pid_n``
    bound just before their first use; True when it did."""
    counts = _store_counts(fn)
    params = set(arg_names(fn))
    for body in statement_lists(fn):
        defined = set(params)
        for idx, stmt in enumerate(body):
            for node in ast.walk(stmt):
                if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv)
                        and _is_linear_pid(node.left, fn, counts)):
                    continue
                pid, div = node.left, node.right
                reads = {n.id for n in ast.walk(div) if isinstance(n, ast.Name)} | \
                    ({pid.id} if isinstance(pid, ast.Name) else set())
                if not reads <= defined or any(counts.get(r, 0) > 1 for r in reads):
                    continue
                mod = ast.BinOp(left=pid, op=ast.Mod(), right=div)
                if not any(isinstance(n, ast.BinOp) and same(n, mod) for n in ast.walk(fn)):
                    continue
                outer, inner = fresh_name(taken, "pid_m"), fresh_name(taken, "pid_n")
                _NameExpressions({ast.dump(node): outer, ast.dump(mod): inner}).visit(fn)
                body[idx:idx] = template("OUTER = PID // DIV\nINNER = PID % DIV\n",
                                         OUTER=outer, INNER=inner, PID=pid, DIV=div)
                return True
            defined |= stored_names(stmt)
    return False


def _derived(fn: ast.FunctionDef, root: str) -> set[str]:
    """Names computed (transitively) from *root* in *fn*."""
    names = {root}
    changed = True
    while changed:
        changed = False
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                reads = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                if reads & names:
                    new = stored_names(node) - names
                    if new:
                        names |= new
                        changed = True
    return names


def _outer_count(fn: ast.FunctionDef, order: "TileOrder", before: int) -> ast.expr | None:
    """Kernel-side count of outer tiles: ``cdiv(M, BLOCK_M)`` found from the code, else None."""
    params = {a.arg: a for a in fn.args.args}
    outer = order.outer
    blocks = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            pair = [node.left, node.right]
            if any(isinstance(x, ast.Name) and x.id == outer for x in pair):
                blocks |= {x.id for x in pair if isinstance(x, ast.Name) and x.id in params
                           and is_constexpr_arg(params[x.id])}
    if len(blocks) != 1:
        return None
    block = blocks.pop()
    for stmt in order.body[:before]:   # an existing `num_pid_m = tl.cdiv(M, BLOCK_M)`
        a = _assign(stmt)
        if a and is_call_to(a[1], "cdiv") and len(a[1].args) == 2 and \
                isinstance(a[1].args[1], ast.Name) and a[1].args[1].id == block:
            return ast.Name(id=a[0], ctx=ast.Load())
    derived = _derived(fn, outer)
    bounds = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Lt):
            left, right = node.left, node.comparators[0]
            if isinstance(right, ast.Name) and right.id in params and not is_constexpr_arg(params[right.id]) \
                    and {n.id for n in ast.walk(left) if isinstance(n, ast.Name)} & derived:
                bounds.add(right.id)
    if len(bounds) != 1:
        return None
    return template_expr(f"tl.cdiv({bounds.pop()}, {block})")


def _grouped_statements(order: TileOrder, group: str, pid: ast.expr, n_inner: ast.expr,
                        n_outer: ast.expr, taken: set[str]) -> list[ast.stmt]:
    sfx = order.outer.split("_")[-1] if "_" in order.outer else "m"
    names = {k: fresh_name(taken, f"{k}_{sfx}") for k in ("first_pid", "group_size")}
    npg, gid = fresh_name(taken, "num_pid_in_group"), fresh_name(taken, "group_id")
    return template(
        "NPG = GROUP * NINNER\n"
        "GID = PID // NPG\n"
        "FIRST = GID * GROUP\n"
        "GSIZE = tl.minimum(NOUTER - FIRST, GROUP)\n"
        "OUTER = FIRST + PID % NPG % GSIZE\n"
        "INNER = PID % NPG // GSIZE\n",
        NPG=npg, GID=gid, FIRST=names["first_pid"], GSIZE=names["group_size"], GROUP=group,
        NINNER=n_inner, NOUTER=n_outer, PID=pid, OUTER=order.outer, INNER=order.inner)


def _host_to_kernel(expr: ast.expr, binding: dict[str, ast.expr]) -> ast.expr:
    """Rewrite a host (launch) expression in terms of the kernel's parameters."""
    for param, value in binding.items():
        if same(value, expr):
            return ast.Name(id=param, ctx=ast.Load())
    if isinstance(expr, ast.Constant):
        return expr
    if isinstance(expr, ast.BinOp):
        return ast.BinOp(left=_host_to_kernel(expr.left, binding), op=expr.op,
                         right=_host_to_kernel(expr.right, binding))
    if is_call_to(expr, "cdiv") and len(expr.args) == 2 and not expr.keywords:
        return template_expr("tl.cdiv(A, B)", A=_host_to_kernel(expr.args[0], binding),
                             B=_host_to_kernel(expr.args[1], binding))
    raise Skip(f"grid term {ast.unparse(expr)} is not computable from the kernel's arguments")


def grouped_order(ctx: OpContext) -> Edit:
    """Rewrite a row-major tile mapping into grouped ordering with a new GROUP_M parameter."""
    tree = ctx.module.clone()
    kernels = launched_kernels(tree)
    taken = all_names(tree)
    for fn in kernels.values():
        if not (find_linear_order(fn) or find_2d_order(fn)):
            name_inline_order(fn, taken)
    found = [(name, find_linear_order(fn) or find_2d_order(fn)) for name, fn in kernels.items()]
    found = [(name, order) for name, order in found if order is not None]
    if not found:
        raise Skip("no row-major program-id mapping (pid // n, pid % n or program_id(0/1)) found")
    name, order = ctx.rng.choice(found)
    fn = kernels[name]
    if any("GROUP" in a.upper() for a in arg_names(fn)):
        raise Skip(f"kernel {name} already takes a GROUP parameter")
    calls = launch_calls_in_launch(tree, name)
    group = fresh_name(taken, f"GROUP_{order.outer.split('_')[-1].upper() if '_' in order.outer else 'M'}")
    first = min(order.stmt_indices)
    if order.pid is not None:   # 1-D grid
        pid, n_inner = order.pid, order.n_inner
        n_outer = _outer_count(fn, order, first)
        if n_outer is None and not order.pid_is_program_id:
            raise Skip(f"cannot find the number of {order.outer} tiles in {name}")
        if n_outer is None:
            n_outer = template_expr("tl.cdiv(tl.num_programs(0), D)", D=n_inner)
        prefix: list[ast.stmt] = []
    else:                       # 2-D grid: becomes 1-D
        sites = [grid_site(tree, c) for c in calls]
        dims = [grid_dims(expr) for expr, _ in sites]
        if any(len(d) != 2 for d in dims) or any(not same(d[0], dims[0][0]) or not same(d[1], dims[0][1])
                                                 for d in dims):
            raise Skip("2-D kernel launched with a grid that is not one literal (outer, inner) pair")
        binding = call_binding(calls[0], fn)
        n_outer = _host_to_kernel(dims[0][0], binding)
        n_inner = _host_to_kernel(dims[0][1], binding)
        pid_name = fresh_name(taken, "pid")
        pid = ast.Name(id=pid_name, ctx=ast.Load())
        prefix = template(f"{pid_name} = tl.program_id(0)")
        for (expr, setter), d in zip(sites, dims):
            setter(ast.Tuple(elts=[ast.BinOp(left=d[0], op=ast.Mult(), right=d[1])], ctx=ast.Load()))
    new = prefix + _grouped_statements(order, group, pid, n_inner, n_outer, taken)
    body = [s for i, s in enumerate(order.body) if i not in order.stmt_indices]
    order.body[:] = body[:first] + new + body[first:]
    add_template_param(tree, name, group, GROUP_VALUES)
    return Edit(tree, f"{name}: grouped program order ({order.outer}, {order.inner}) with {group} in {GROUP_VALUES}")


OPERATORS = (Operator("grouped_order", "mutate", 4.0, grouped_order),)
