"""Split-K: more programs for GEMMs whose K is deep relative to their output tiles.

Recognised in a launched kernel (top level of its body): an accumulator
``acc = tl.zeros((BM, BN), ...)``, then one K loop ``for k in range(0, STOP[, STEP])``
that only adds ``tl.dot`` products into it (``acc += tl.dot(a, b)``,
``acc = tl.dot(a, b, acc)`` or ``acc = acc + tl.dot(a, b)``), then the epilogue and
stores.  The kernel's launch is a statement of ``launch`` on a literal 1-D or 2-D grid.

The edit is two-phase, so any epilogue (bias, activation, casts) still runs once on
the full sum.  A copy ``<kernel>_split_k`` keeps the code before the K loop (the
program-to-tile map, shared by both phases so later edits of it stay consistent)
and switches on a constexpr ``SPLIT_PHASE``:

* phase 0 runs on the grid plus one axis of ``SPLIT_K`` programs; split ``s`` runs
  trips ``[s * per, (s + 1) * per)`` of the K loop (``per`` = ``cdiv(trips, SPLIT_K)``)
  and stores its raw accumulator tile, unmasked, at its program's slot of an fp32
  buffer of ``SPLIT_K * programs * BM * BN`` elements that ``launch`` allocates;
* phase 1 runs on the original grid, adds the ``SPLIT_K`` partial tiles of its slot
  and runs the original epilogue and masked stores.

``launch`` keeps the original single launch for ``SPLIT_K == 1`` (the default, so the
tuner can keep it) and runs both phases otherwise.  ``SPLIT_K`` takes values from
``[1, 4, 2, 8]``, as many as keep the kernel space within what the verifier traces.
"""

from __future__ import annotations

import ast
import copy

from .ast_module import (Skip, all_names, arg_names, fresh_name, is_call_to, jit_functions,
                         launch_function, launched_kernels, loaded_names, program_id_axis,
                         read_params, stored_names, template, template_expr, write_params)
from .ast_signature import (add_constexpr_param, add_launch_keyword, add_runtime_param, call_binding,
                            grid_dims, grid_site, launch_calls_in_launch)
from .ops_base import TRACED_KERNEL_CONFIGS, Edit, OpContext, Operator, fit_space, kernel_space_size

SPLIT_VALUES = [1, 4, 2, 8]
_EFFECTS = ("store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
            "atomic_and", "atomic_or", "atomic_xor", "device_print", "device_assert", "debug_barrier")


def _name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _dot_update(stmt: ast.stmt, acc: str) -> bool:
    """``acc += dot``, ``acc = acc + dot`` or ``acc = tl.dot(a, b, acc)`` (dot free of acc)."""
    def dot_without_acc(e: ast.expr) -> bool:
        return any(is_call_to(n, "dot") for n in ast.walk(e)) and acc not in loaded_names(e)
    if isinstance(stmt, ast.AugAssign) and _name(stmt.target, acc) and isinstance(stmt.op, ast.Add):
        return dot_without_acc(stmt.value)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _name(stmt.targets[0], acc):
        v = stmt.value
        if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Add):
            return (_name(v.left, acc) and dot_without_acc(v.right)) or (_name(v.right, acc) and dot_without_acc(v.left))
        if is_call_to(v, "dot"):
            acc_args = [a for a in v.args[2:3]] + [k.value for k in v.keywords if k.arg == "acc"]
            rest = v.args[:2] + [k.value for k in v.keywords if k.arg != "acc"]
            return len(acc_args) == 1 and _name(acc_args[0], acc) and not any(acc in loaded_names(r) for r in rest)
    return False


def _find_k_loop(fn: ast.FunctionDef) -> tuple[int, int, str, list[ast.expr]]:
    """(accumulator statement index, loop index, accumulator name, accumulator shape)."""
    for i, stmt in enumerate(fn.body):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and is_call_to(stmt.value, "zeros") and stmt.value.args
                and isinstance(stmt.value.args[0], (ast.Tuple, ast.List)) and len(stmt.value.args[0].elts) == 2):
            continue
        acc = stmt.targets[0].id
        for j in range(i + 1, len(fn.body)):
            loop = fn.body[j]
            if acc in loaded_names(loop) or acc in stored_names(loop):
                if not isinstance(loop, ast.For):
                    break
                writes = [n for n in ast.walk(loop) if isinstance(n, (ast.Assign, ast.AugAssign))
                          and acc in stored_names(n)]
                if writes and all(_dot_update(w, acc) for w in writes) \
                        and sum(_name(n, acc) for n in ast.walk(loop)) == 2 * len(writes) - sum(
                            isinstance(w, ast.AugAssign) for w in writes):
                    return i, j, acc, list(stmt.value.args[0].elts)
                break
    raise Skip("no top-level K loop that only adds tl.dot products into a tl.zeros((BM, BN)) accumulator")


def _loop_range(loop: ast.For) -> tuple[ast.expr, ast.expr | None]:
    """(stop, step or None) of ``range(stop)`` / ``range(0, stop[, step])``."""
    it = loop.iter
    if not (isinstance(it, ast.Call) and _name(it.func, "range")) or it.keywords or loop.orelse \
            or not isinstance(loop.target, ast.Name):
        raise Skip("the K loop is not a plain for-range loop")
    args = it.args
    if len(args) == 1:
        return args[0], None
    if len(args) in (2, 3) and isinstance(args[0], ast.Constant) and args[0].value == 0:
        return args[1], args[2] if len(args) == 3 else None
    raise Skip("the K loop does not start at 0")


def _tile_id(dims: int, taken: set[str]) -> tuple[list[ast.stmt], str, str]:
    """Statements binding a linear program id over the first *dims* axes and their count."""
    tile, tiles = fresh_name(taken, "tile_id"), fresh_name(taken, "num_tiles")
    if dims == 1:
        code = f"{tile} = tl.program_id(0)\n{tiles} = tl.num_programs(0)\n"
    else:
        code = (f"{tile} = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)\n"
                f"{tiles} = tl.num_programs(0) * tl.num_programs(1)\n")
    return template(code), tile, tiles


def _phased_kernel(fn: ast.FunctionDef, name: str, part: str, split: str, phase: str, loop_at: int,
                   acc: str, shape: list[ast.expr], dims: int) -> ast.FunctionDef:
    """A copy of *fn* whose K loop becomes a constexpr switch between the two phases: 0 runs
    a 1/SPLIT_K share of the loop and stores the raw tile, 1 adds the partial tiles and runs
    the original epilogue.  Both share the code before the loop (the program-to-tile map)."""
    new = copy.deepcopy(fn)
    new.name = name
    taken = all_names(new)
    loop = new.body[loop_at]
    stop, step = _loop_range(loop)
    sid, per, lo, hi = (fresh_name(taken, n) for n in ("split_id", "k_per_split", "k_lo", "k_hi"))
    head, tile, tiles = _tile_id(dims, taken)
    offs = fresh_name(taken, "part_offs")
    stride = "" if step is None else " * STEP"
    loop.iter = template_expr(f"range({lo}, {hi}{', STEP' if step is not None else ''})",
                              STEP=step or ast.Constant(1))
    (switch,) = template(
        f"if {phase} == 0:\n"
        f"    {sid} = tl.program_id({dims})\n"
        f"    {per} = tl.cdiv({'tl.cdiv(STOP, STEP)' if step is not None else 'STOP'}, {split})\n"
        f"    {lo} = {sid} * {per}{stride}\n"
        f"    {hi} = tl.minimum({lo} + {per}{stride}, STOP)\n"
        f"    pass\n"
        f"    tl.store({part} + ({sid} * {tiles} + {tile}).to(tl.int64) * (BM * BN) + {offs}, {acc})\n"
        f"else:\n"
        f"    for {sid} in range(0, {split}):\n"
        f"        {acc} += tl.load({part} + ({sid} * {tiles} + {tile}).to(tl.int64) * (BM * BN) + {offs})\n",
        STOP=stop, STEP=step or ast.Constant(1), BM=shape[0], BN=shape[1])
    switch.body[4] = loop
    switch.orelse += new.body[loop_at + 1:]
    offsets = template(f"{offs} = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]",
                       BM=shape[0], BN=shape[1])
    new.body = new.body[:loop_at] + head + offsets + [switch]
    return new


def _split(tree: ast.Module, name: str, fn: ast.FunctionDef, ctx: OpContext) -> str:
    if any("SPLIT" in a.upper() for a in arg_names(fn)):
        raise Skip(f"{name} is already split")
    if any(isinstance(n, ast.Return) for n in ast.walk(fn)):
        raise Skip(f"{name} returns early")
    _, loop_at, acc, shape = _find_k_loop(fn)
    loop = fn.body[loop_at]
    _loop_range(loop)
    after = fn.body[loop_at + 1:]
    if not any(is_call_to(n, "store") for s in after for n in ast.walk(s)):
        raise Skip(f"{name} stores nothing after its K loop")
    loop_only = stored_names(loop) - set().union(set(), *(stored_names(s) for s in fn.body[:loop_at]))
    if (loop_only - {acc}) & set().union(set(), *(loaded_names(s) for s in after)):
        raise Skip(f"{name}'s epilogue reads values computed in the K loop")
    params = set(arg_names(fn))
    if not all(isinstance(d, ast.Name) and d.id in params for d in shape):
        raise Skip(f"{name}'s accumulator shape is not given by its block parameters")
    axes = {program_id_axis(n) for n in ast.walk(fn) if is_call_to(n, "program_id", "num_programs")}
    launch = launch_function(tree)
    calls = launch_calls_in_launch(tree, name)
    if len(calls) != 1:
        raise Skip(f"{name} is launched more than once")
    call = calls[0]
    stmt_at = next((i for i, s in enumerate(launch.body) if isinstance(s, ast.Expr) and s.value is call), None)
    if stmt_at is None:
        raise Skip(f"{name}'s launch is not a statement of launch() itself")
    grid, _ = grid_site(tree, call)
    dims = grid_dims(grid)
    if isinstance(call.func.slice, ast.Name):   # a named grid: refer to its axes
        dims = [ast.Subscript(value=ast.Name(id=call.func.slice.id, ctx=ast.Load()), slice=ast.Constant(i),
                              ctx=ast.Load()) for i in range(len(dims))]
    if len(dims) > 2 or not axes <= set(range(len(dims))):
        raise Skip(f"{name} uses program-id axes {sorted(a for a in axes if a is not None)} on a "
                   f"{len(dims)}-D grid (split-K needs a free axis after a 1-D or 2-D grid)")
    binding = call_binding(call, fn)
    host_shape = [binding.get(d.id) for d in shape]
    if any(h is None for h in host_shape):
        raise Skip(f"{name}'s block parameters are not passed at its launch")
    host_inputs = [a.arg for a in launch.args.args]
    if not host_inputs:
        raise Skip("launch() takes no positional input to take the device from")

    taken = all_names(tree)
    split = fresh_name(taken, "SPLIT_K")
    kernel = fresh_name(taken, f"{name}_split_k")
    part = fresh_name(taken | set(arg_names(fn)), "part_ptr")
    phase = fresh_name(taken | set(arg_names(fn)), "SPLIT_PHASE")
    buffer, split_grid = fresh_name(taken, "partials"), fresh_name(taken, "split_grid")
    tree.body.insert(tree.body.index(fn) + 1,
                     _phased_kernel(fn, kernel, part, split, phase, loop_at, acc, shape, len(dims)))

    phase_calls = []
    for value in (0, 1):
        c = copy.deepcopy(call)
        c.func.value.id = kernel
        if value == 0:
            c.func.slice = ast.Name(id=split_grid, ctx=ast.Load())
        hints_at = len(c.keywords) - sum(k.arg in ("num_warps", "num_stages", "num_ctas", "maxnreg")
                                         for k in c.keywords)
        c.keywords[hints_at:hints_at] = [ast.keyword(arg=part, value=ast.Name(id=buffer, ctx=ast.Load())),
                                         ast.keyword(arg=split, value=ast.Name(id=split, ctx=ast.Load())),
                                         ast.keyword(arg=phase, value=ast.Constant(value))]
        phase_calls.append(c)
    size = dims[0] if len(dims) == 1 else ast.BinOp(left=dims[0], op=ast.Mult(), right=dims[1])
    (branch,) = template(
        f"if {split} == 1:\n"
        f"    pass\n"
        f"else:\n"
        f"    {buffer} = torch.empty(({split} * G * (BM * BN),), device={host_inputs[0]}.device, "
        f"dtype=torch.float32)\n"
        f"    {split_grid} = GRID\n", G=copy.deepcopy(size), BM=host_shape[0], BN=host_shape[1],
        GRID=ast.Tuple(elts=[copy.deepcopy(d) for d in dims] + [ast.Name(id=split, ctx=ast.Load())], ctx=ast.Load()))
    branch.body = [launch.body[stmt_at]]
    branch.orelse += [ast.Expr(value=c) for c in phase_calls]
    launch.body[stmt_at] = branch
    add_runtime_param(tree, kernel, part, launch_calls_in_launch(tree, kernel))
    add_constexpr_param(tree, kernel, split)
    add_constexpr_param(tree, kernel, phase)
    add_launch_keyword(tree, split)

    space = read_params(tree)
    values = list(SPLIT_VALUES)
    while len(values) > 2 and kernel_space_size(space) * len(values) > TRACED_KERNEL_CONFIGS:
        values.pop()
    hints = {k: v for k, v in space.items() if k in ("num_warps", "num_stages")}
    space = {**{k: v for k, v in space.items() if k not in hints}, split: values, **hints}
    write_params(tree, fit_space(space, split, ctx.rng))
    return (f"{name}: split-K in two launches of {kernel} (phase 0: each of {split} programs per tile sums a "
            f"share of the K loop into an fp32 partial tile; phase 1 adds them and runs the epilogue), "
            f"{split} in {values}")


def split_k(ctx: OpContext) -> Edit:
    """Split a GEMM kernel's K loop over more programs; a reduce pass adds the partial tiles."""
    reasons = []
    for name in launched_kernels(ctx.module.tree):
        tree = ctx.module.clone()
        try:
            return Edit(tree, _split(tree, name, jit_functions(tree)[name], ctx))
        except Skip as exc:
            reasons.append(f"{name}: {exc}")
    raise Skip("; ".join(reasons) or "no launched kernel")


OPERATORS = (Operator("split_k", "mutate", 1.0, split_k),)
