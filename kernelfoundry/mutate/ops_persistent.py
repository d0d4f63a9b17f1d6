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

from .ast_module import (Skip, arg_names, fresh_name, launched_kernels, read_params, template, template_expr,
                         uses_dot, write_params)
from .ast_signature import add_launch_keyword, add_runtime_param, pass_keyword
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


OPERATORS = (Operator("persistent", "mutate", 1, persistent),)
