"""Single-pass whole-row variant of a row-wise kernel that loops over its row in blocks.

When one block covers the row (``BLOCK = triton.next_power_of_2(N)``) every block
loop runs once, so a copy of the kernel has its loops peeled and the repeated
loads of later passes dropped: the row is read once and kept in registers.
``launch`` uses the copy only while the row fits (``next_power_of_2(N) <=
ROW_BLOCK_LIMIT``) and the original looping kernel otherwise::

    if triton.next_power_of_2(n_cols) <= 16384:
        row_block = triton.next_power_of_2(n_cols)
        kernel_row[grid](..., BLOCK_N=row_block, ...)
    else:
        kernel[grid](..., BLOCK_N=BLOCK_N, ...)

Kernels using ``tl.dot`` are left alone (a whole-K tile is not a register tile).
"""

from __future__ import annotations

import ast
import copy

from .ast_loops import block_loop, drop_recomputations, peel_single_trip
from .ast_module import (Skip, all_names, arg_names, fresh_name, is_constexpr_arg, launch_function,
                         launched_kernels, loaded_names, template, uses_dot)
from .ast_signature import call_binding, launch_calls_in_launch
from .ops_base import Edit, OpContext, Operator

#: Largest row block (elements) the single-pass copy is used for.
ROW_BLOCK_LIMIT = 16384


def _row_loops(fn: ast.FunctionDef) -> tuple[str, str] | None:
    """(BLOCK, N) when every loop mentioning a constexpr BLOCK is a block loop over N."""
    constexprs = [a.arg for a in fn.args.args if is_constexpr_arg(a)]
    for block in constexprs:
        loops = [n for n in ast.walk(fn) if isinstance(n, ast.For) and block in loaded_names(n.iter)]
        bounds = {block_loop(n, block) for n in loops}
        if loops and len(bounds) == 1 and None not in bounds:
            n = bounds.pop()
            if n in arg_names(fn) and n not in constexprs:
                return block, n
    return None


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == self.old and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node)
        return node


def whole_row(ctx: OpContext) -> Edit:
    """Add a single-pass copy of a block-looping row kernel, used when a block covers the row."""
    tree = ctx.module.clone()
    launch = launch_function(tree)
    reasons = []
    for name, fn in launched_kernels(tree).items():
        if uses_dot(fn):
            reasons.append(f"{name} uses tl.dot")
            continue
        found = _row_loops(fn)
        if found is None:
            reasons.append(f"{name} has no block loops over a row length")
            continue
        block, n_param = found
        try:
            calls = launch_calls_in_launch(tree, name)
        except Skip as exc:
            reasons.append(str(exc))
            continue
        sites = [s for s in launch.body if any(c in list(ast.walk(s)) for c in calls)]
        if len(sites) != len(calls) or any(isinstance(s, (ast.If, ast.For, ast.While, ast.With)) for s in sites):
            reasons.append(f"{name} is not launched by plain statements of launch()")
            continue
        taken = all_names(tree)
        row_name = fresh_name(taken, f"{name}_row")
        row_fn = copy.deepcopy(fn)
        row_fn.name = row_name
        peel_single_trip(row_fn, block)
        drop_recomputations(row_fn)
        tree.body.insert(tree.body.index(fn) + 1, row_fn)
        row_block = fresh_name(taken, "row_block")
        for stmt, call in zip(sites, calls):
            binding = call_binding(call, fn)
            n_host, block_host = binding.get(n_param), binding.get(block)
            if n_host is None or block_host is None:
                raise Skip(f"launch of {name} does not pass {n_param} and {block}")
            fast = copy.deepcopy(stmt)
            fast_call = next(c for c in ast.walk(fast) if isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript)
                             and isinstance(c.func.value, ast.Name) and c.func.value.id == name)
            fast_call.func.value.id = row_name
            params = arg_names(fn)
            for i, arg in enumerate(fast_call.args):
                if params[i] == block:
                    fast_call.args[i] = ast.Name(id=row_block, ctx=ast.Load())
            for kw in fast_call.keywords:
                if kw.arg == block:
                    kw.value = ast.Name(id=row_block, ctx=ast.Load())
            if isinstance(block_host, ast.Name):
                fast = _Rename(block_host.id, row_block).visit(fast)
            (branch,) = template(f"if triton.next_power_of_2(N) <= {ROW_BLOCK_LIMIT}:\n"
                                 "    RB = triton.next_power_of_2(N)\n"
                                 "else:\n"
                                 "    pass\n", N=n_host, RB=row_block)
            branch.body.append(fast)
            branch.orelse = [stmt]
            launch.body[launch.body.index(stmt)] = branch
        return Edit(tree, f"{name}: single-pass copy {row_name} (loops over {n_param} peeled, repeated loads "
                          f"dropped) used when next_power_of_2({n_param}) <= {ROW_BLOCK_LIMIT}")
    raise Skip("; ".join(reasons) or "no launched kernel")


OPERATORS = (Operator("whole_row", "mutate", 2.0, whole_row),)
