"""Persistent grid: a fixed number of programs loops over the tiles of the original 1-D grid.

``pid = tl.program_id(0); <body>`` becomes::

    for pid in range(tl.program_id(0), n_tiles, num_programs):
        <body>

with ``n_tiles`` (the original grid) and ``num_programs`` new runtime arguments, and the
launch grid ``(min(n_tiles, NUM_PROGRAMS),)``.  ``NUM_PROGRAMS`` is a template parameter
used on the host only (the kernel does not recompile per value); the launch cannot ask
the device for its core count, so the values are fixed grid sizes and the model picks
the best per hardware.  Applies where ``rows_per_program`` does (its recognition), except
to kernels using ``tl.dot``.
"""

from __future__ import annotations

import ast
import copy

from .ast_module import (Skip, all_names, arg_names, fresh_name, is_call_to, is_constexpr_arg, launch_function,
                         launched_kernels, program_id_axis, read_params, same, stored_names, template,
                         template_expr, uses_dot, write_params)
from .ast_signature import (add_launch_keyword, add_runtime_param, grid_dims, grid_site, launch_calls_in_launch,
                            pass_keyword)
from .ops_base import Edit, OpContext, Operator, fit_space
from .ops_rows import _coarsenable, one_d_grid_body

#: Grid sizes to try: about 2-32 programs per core on 132-core GPUs, a few per core on NPUs.
PROGRAM_COUNTS = [1024, 256, 4096]
PARAM = "NUM_PROGRAMS"


def persistent(ctx: OpContext) -> Edit:
    """Launch at most NUM_PROGRAMS programs; each loops over the old grid's ids with that stride."""
    tree = ctx.module.clone()
    if PARAM in read_params(tree):
        raise Skip(f"PARAMS already has {PARAM}")
    reasons = []
    for name, fn in launched_kernels(tree).items():
        why = _coarsenable(fn)
        if why is None and uses_dot(fn):
            why = "uses tl.dot (the model counts a persistent program's later tiles as re-reads of its own " \
                  "data, and its nested loops make traces too long)"
        if why is None and any("num_programs" in a.lower() or "n_tiles" in a.lower() for a in arg_names(fn)):
            why = "is already persistent"
        if why:
            reasons.append(f"{name} {why}")
            continue
        try:
            g = one_d_grid_body(tree, name, fn, pid_assigned_once=True)
        except Skip as exc:
            reasons.append(str(exc))
            continue
        calls, sites, dims, taken, first, docstring, pid, body = (g.calls, g.sites, g.dims, g.taken, g.first,
                                                                  g.docstring, g.pid, g.body)
        n_tiles, n_programs = fresh_name(taken, "n_tiles"), fresh_name(taken, "num_programs")
        (loop,) = template("for PID in range(tl.program_id(0), TILES, PROGRAMS):\n    pass\n",
                           PID=pid, TILES=n_tiles, PROGRAMS=n_programs)
        loop.body = body
        fn.body = ([first] if docstring else []) + [loop]
        add_runtime_param(tree, name, n_tiles, calls)
        add_runtime_param(tree, name, n_programs, calls)
        for (_, setter), call, d in zip(sites, calls, dims):
            launched = template_expr(f"min(G, {PARAM})", G=d[0])
            setter(ast.Tuple(elts=[launched], ctx=ast.Load()))
            pass_keyword([call], n_tiles, d[0])
            pass_keyword([call], n_programs, launched)
        add_launch_keyword(tree, PARAM)
        space = read_params(tree)
        hints = {k: v for k, v in space.items() if k in ("num_warps", "num_stages")}
        rest = {k: v for k, v in space.items() if k not in hints}
        write_params(tree, fit_space({**rest, PARAM: list(PROGRAM_COUNTS), **hints}, PARAM, ctx.rng))
        return Edit(tree, f"{name}: persistent grid of min(grid, {PARAM}) programs, {PARAM} in {PROGRAM_COUNTS}, "
                          f"each looping over the old grid's ids with that stride")
    raise Skip("; ".join(reasons) or "no launched kernel")


def _persistent_loop(fn: ast.FunctionDef) -> tuple[ast.For, str, str] | None:
    """``(loop, n_tiles, num_programs)`` when *fn*'s body is one ``for pid in range(tl.program_id(0),
    n_tiles, num_programs)`` loop over runtime parameters that the body never reassigns."""
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) \
        and isinstance(fn.body[0].value, ast.Constant) else fn.body
    if len(body) != 1 or not isinstance(body[0], ast.For) or body[0].orelse:
        return None
    loop = body[0]
    it = loop.iter
    if not (isinstance(loop.target, ast.Name) and is_call_to(it, "range") and len(it.args) == 3
            and not it.keywords and program_id_axis(it.args[0]) == 0
            and all(isinstance(a, ast.Name) for a in it.args[1:])):
        return None
    tiles, programs = it.args[1].id, it.args[2].id
    runtime = {a.arg for a in fn.args.args if not is_constexpr_arg(a)}
    assigned = set().union(*(stored_names(s) for s in loop.body)) if loop.body else set()
    if tiles == programs or not {tiles, programs} <= runtime or {loop.target.id, tiles, programs} & assigned:
        return None
    if any(is_call_to(n, "program_id", "num_programs") for s in loop.body for n in ast.walk(s)):
        return None
    return loop, tiles, programs


def unwrap_persistent(tree: ast.Module) -> tuple[ast.Module, list[str]]:
    """Undo :func:`persistent`: the kernels it made persistent get back one program per tile
    (``pid = tl.program_id(0)``, grid ``(n_tiles,)``) and ``NUM_PROGRAMS`` leaves PARAMS and ``launch``.
    Returns the edited copy and the names of the kernels unwrapped, or *tree* itself and ``[]`` when
    the source is not exactly what ``persistent`` writes."""
    if PARAM not in read_params(tree):
        return tree, []
    new = copy.deepcopy(tree)
    edits, unwrapped = [], []
    for name, fn in launched_kernels(new).items():
        found = _persistent_loop(fn)
        if found is None:
            continue
        loop, tiles, programs = found
        calls = launch_calls_in_launch(new, name)
        if not calls:
            return tree, []
        for call in calls:
            kw = {k.arg: k.value for k in call.keywords}
            if tiles not in kw or programs not in kw or len(call.keywords) != len(set(kw)):
                return tree, []
            expr, setter = grid_site(new, call)
            expected = template_expr(f"min(G, {PARAM})", G=kw[tiles])
            if not (isinstance(expr, (ast.Tuple, ast.List)) and len(expr.elts) == 1
                    and same(expr.elts[0], expected) and same(kw[programs], expected)):
                return tree, []
            edits.append((call, setter, tiles, programs, kw[tiles]))
        (bind,) = template("PID = tl.program_id(0)", PID=loop.target.id)
        at = fn.body.index(loop)
        fn.body[at:at + 1] = [bind, *loop.body]
        fn.args.args = [a for a in fn.args.args if a.arg not in (tiles, programs)]
        unwrapped.append(name)
    if not edits:
        return tree, []
    for call, setter, tiles, programs, n_tiles in edits:
        call.keywords = [k for k in call.keywords if k.arg not in (tiles, programs)]
        setter(ast.Tuple(elts=[n_tiles], ctx=ast.Load()))
    launch = launch_function(new)
    kwonly = [i for i, a in enumerate(launch.args.kwonlyargs) if a.arg == PARAM]
    if len(kwonly) != 1 or any(PARAM in all_names(s) for s in launch.body):
        return tree, []       # NUM_PROGRAMS is used otherwise: not what persistent writes
    del launch.args.kwonlyargs[kwonly[0]]
    del launch.args.kw_defaults[kwonly[0]]
    space = read_params(new)
    del space[PARAM]
    write_params(new, space)
    return new, unwrapped


OPERATORS = (Operator("persistent", "mutate", 1, persistent),)
