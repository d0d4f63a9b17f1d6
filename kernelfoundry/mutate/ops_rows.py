"""Coarsen programs: each program handles ``ROWS_PER_PROGRAM`` consecutive ids of the
original 1-D grid (rows of a row-wise kernel, tiles of a tiled one).

``pid = tl.program_id(0); <body>`` becomes::

    pid_base = tl.program_id(0)
    for pid_off in range(0, ROWS_PER_PROGRAM):
        pid = pid_base * ROWS_PER_PROGRAM + pid_off
        if pid < grid_size:
            <body>

with ``grid_size`` (the original grid) a new runtime argument and the launch grid
``(triton.cdiv(grid_size, ROWS_PER_PROGRAM),)``.  Fewer, longer programs: less
scheduling overhead and a different wave shape for the model to weigh.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .ast_module import (Skip, all_names, arg_names, fresh_name, is_call_to, launched_kernels,
                         program_id_axis, template, template_expr)
from .ast_signature import (add_runtime_param, add_template_param, grid_dims, grid_site,
                            launch_calls_in_launch, pass_keyword)
from .ops_base import Edit, OpContext, Operator

COARSEN_VALUES = [4, 2, 8]


class _ReplaceProgramId(ast.NodeTransformer):
    def __init__(self, name: str):
        self.name = name

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if program_id_axis(node) == 0:
            return ast.copy_location(ast.Name(id=self.name, ctx=ast.Load()), node)
        return self.generic_visit(node)


def _coarsenable(fn: ast.FunctionDef) -> str | None:
    """Why *fn* cannot be coarsened, or None when it can."""
    axes = [program_id_axis(n) for n in ast.walk(fn) if is_call_to(n, "program_id")]
    if not axes:
        return "does not read tl.program_id(0)"
    if any(a != 0 for a in axes):
        return "uses a program id other than axis 0"
    if any(is_call_to(n, "num_programs") for n in ast.walk(fn)):
        return "reads tl.num_programs"
    if any(isinstance(n, ast.Return) for n in ast.walk(fn)):
        return "returns early"
    if any("PER_PROGRAM" in a.upper() for a in arg_names(fn)):
        return "is already coarsened"
    if any(isinstance(n, ast.For) and is_call_to(n.iter, "range") and n.iter.args
           and program_id_axis(n.iter.args[0]) == 0 for n in ast.walk(fn)):
        # coarsening a persistent loop only repeats what a smaller grid size does, at the
        # cost of nested loops that the trace runs in full
        return "is persistent (a loop starts at tl.program_id(0))"
    return None


@dataclass
class GridBody:
    """A kernel launched on 1-D grids: its launch calls and grid sites, and its body with the
    program id bound to one name (``pid``), the leading ``pid = tl.program_id(0)`` taken out."""

    calls: list
    sites: list
    dims: list
    taken: set
    first: ast.stmt | None
    docstring: bool
    pid: str
    body: list


def one_d_launch_sites(tree: ast.Module, name: str) -> tuple[list, list, list]:
    """Kernel *name*'s launch calls in ``launch``, their grid sites and grid dims; Skip unless all are 1-D."""
    calls = launch_calls_in_launch(tree, name)
    sites = [grid_site(tree, c) for c in calls]
    dims = [grid_dims(expr) for expr, _ in sites]
    if any(len(d) != 1 for d in dims):
        raise Skip(f"{name} is launched on a grid that is not 1-D")
    return calls, sites, dims


def one_d_grid_body(tree: ast.Module, name: str, fn: ast.FunctionDef, *, pid_assigned_once: bool = False) -> GridBody:
    """The :class:`GridBody` of kernel *name*; Skip unless every launch of it is on a literal 1-D grid.
    With *pid_assigned_once*, a leading ``pid = tl.program_id(0)`` is reused only if ``pid`` is never
    assigned again."""
    calls, sites, dims = one_d_launch_sites(tree, name)
    taken = all_names(tree)
    first = fn.body[0] if fn.body else None
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    body = fn.body[1:] if docstring else list(fn.body)
    lead = body[0] if body else None
    if isinstance(lead, ast.Assign) and len(lead.targets) == 1 and isinstance(lead.targets[0], ast.Name) \
            and program_id_axis(lead.value) == 0 \
            and (not pid_assigned_once or sum(1 for n in ast.walk(fn) if isinstance(n, ast.Name)
                                              and n.id == lead.targets[0].id and not isinstance(n.ctx, ast.Load)) == 1):
        pid = lead.targets[0].id
        body = body[1:]
    else:
        pid = fresh_name(taken, "pid")
    body = [_ReplaceProgramId(pid).visit(s) for s in body]
    return GridBody(calls, sites, dims, taken, first, docstring, pid, body)


def rows_per_program(ctx: OpContext) -> Edit:
    """Let each program handle several consecutive ids of the original 1-D grid."""
    tree = ctx.module.clone()
    reasons = []
    for name, fn in launched_kernels(tree).items():
        why = _coarsenable(fn)
        if why:
            reasons.append(f"{name} {why}")
            continue
        try:
            g = one_d_grid_body(tree, name, fn)
        except Skip as exc:
            reasons.append(str(exc))
            continue
        calls, sites, dims, taken, first, docstring, pid, body = (g.calls, g.sites, g.dims, g.taken, g.first,
                                                                  g.docstring, g.pid, g.body)
        rowish = "row" in pid.lower()
        count = fresh_name(taken, "ROWS_PER_PROGRAM" if rowish else "TILES_PER_PROGRAM")
        grid_size = fresh_name(taken, "grid_size")
        base, off = fresh_name(taken, f"{pid}_base"), fresh_name(taken, f"{pid}_off")
        (loop_stmt,) = template(
            "for OFF in range(0, COUNT):\n"
            "    PID = BASE * COUNT + OFF\n"
            "    if PID < GRID:\n"
            "        pass\n", OFF=off, COUNT=count, PID=pid, BASE=base, GRID=grid_size)
        loop_stmt.body[1].body = body
        fn.body = ([first] if docstring else []) + template(f"{base} = tl.program_id(0)") + [loop_stmt]
        for (expr, setter), d in zip(sites, dims):
            setter(ast.Tuple(elts=[template_expr("triton.cdiv(E, C)", E=d[0], C=count)], ctx=ast.Load()))
        add_runtime_param(tree, name, grid_size, calls)
        for call, d in zip(calls, dims):
            pass_keyword([call], grid_size, d[0])
        add_template_param(tree, name, count, COARSEN_VALUES)
        return Edit(tree, f"{name}: each program handles {count} in {COARSEN_VALUES} consecutive ids of the old grid")
    raise Skip("; ".join(reasons) or "no launched kernel")


OPERATORS = (Operator("rows_per_program", "mutate", 1.5, rows_per_program),)
