"""Crossover between two elites (usually of different archive cells) of one task.

* ``cross_params``: the kernels and ``launch`` of one parent with the PARAMS of the
  other merged in (union, intersection, or the other's lists) for shared names.
* ``swap_kernel``: one parent's version of a kernel (same name and signature)
  replaces the other's, under the other's ``launch`` and PARAMS.
* ``graft_order``: one parent's program-id -> tile mapping (e.g. grouped ordering)
  replaces the other's row-major one, with any template parameter it needs.

Parents are compatible only when their ``launch`` takes the same positional
inputs; anything else (e.g. kernels of different tasks) is refused.
"""

from __future__ import annotations

import ast
import builtins
import copy
from typing import Any

from .ast_module import (KernelModule, Skip, all_names, arg_names, is_call_to, is_constexpr_arg,
                         jit_functions, launch_function, launched_kernels, loaded_names, read_params,
                         statement_lists, stored_names, write_params)
from .ast_signature import add_template_param
from .ops_base import MAX_VALUES, Edit, OpContext, Operator, fit_space
from .ops_ordering import find_2d_order, find_linear_order, name_inline_order
from .ops_params import pow2_bounds


def _positional_inputs(module: KernelModule) -> list[str]:
    a = launch_function(module.tree).args
    return [x.arg for x in (*a.posonlyargs, *a.args)]


def check_compatible(a: KernelModule, b: KernelModule) -> None:
    """Skip unless both launches take the same positional inputs."""
    pa, pb = _positional_inputs(a), _positional_inputs(b)
    if pa != pb:
        raise Skip(f"parents are incompatible: launch({', '.join(pa)}) vs launch({', '.join(pb)})")


def _other(ctx: OpContext) -> KernelModule:
    if ctx.other is None:
        raise Skip("crossover needs a second parent")
    check_compatible(ctx.module, ctx.other)
    return ctx.other


def _merge(mode: str, mine: list[Any], theirs: list[Any]) -> list[Any]:
    if mode == "union":
        return (mine + [v for v in theirs if v not in mine])[:MAX_VALUES]
    if mode == "intersect":
        return [v for v in mine if v in theirs]
    return list(theirs)   # adopt


def cross_params(ctx: OpContext) -> Edit:
    """Keep one parent's code; merge the other parent's PARAMS values into shared names."""
    other = _other(ctx)
    bases = [(ctx.module, other), (other, ctx.module)]
    ctx.rng.shuffle(bases)
    modes = ["union", "intersect", "adopt"]
    ctx.rng.shuffle(modes)
    for base, donor in bases:
        shared = [n for n in base.space if n in donor.space]
        if not shared:
            continue
        base_ctx = OpContext(module=base, rng=ctx.rng, parent=ctx.parent)
        for mode in modes:
            space = {k: list(v) for k, v in base.space.items()}
            for name in shared:
                merged = _merge(mode, space[name], donor.space[name])
                bounds = pow2_bounds(base_ctx, name)
                if bounds:
                    merged = [v for v in merged if bounds[0] <= v <= bounds[1]]
                if merged:
                    space[name] = merged
            try:
                space = fit_space(space, "", ctx.rng)
            except Skip:
                continue
            if space == base.space:
                continue
            tree = base.clone()
            write_params(tree, space)
            if ast.dump(tree) == ast.dump(donor.tree):   # same code: that is the other parent
                continue
            changed = [n for n in shared if space[n] != base.space[n]]
            which = "parent" if base is ctx.module else "inspiration"
            return Edit(tree, f"code of the {which}, PARAMS {mode} with the other parent for "
                              f"{', '.join(changed)}")
    raise Skip("the parents share no template parameter whose values a merge would change")


def _assign_index(body: list[ast.stmt], name: str) -> int | None:
    hits = [i for i, s in enumerate(body) if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name]
    return hits[0] if len(hits) == 1 else None


def _mapping_block(fn: ast.FunctionDef, pid: str, outer: str, inner: str) -> tuple[list[ast.stmt], int, int] | None:
    """(statement list, start, end) of the statements after ``pid = ...`` up to where
    both *outer* and *inner* are bound, in the list that binds them."""
    for body in statement_lists(fn):
        io, ii = _assign_index(body, outer), _assign_index(body, inner)
        if io is None or ii is None:
            continue
        p = _assign_index(body, pid)
        if p is not None and p > min(io, ii):
            return None
        start = 0 if p is None else p + 1
        return body, start, max(io, ii) + 1
    return None


_BUILTINS = set(dir(builtins)) | {"tl", "triton", "torch", "math"}


def _graft(recipient: KernelModule, donor: KernelModule) -> Edit:
    tree = recipient.clone()
    donor_kernels = jit_functions(donor.tree)
    donor_space = read_params(donor.tree)
    taken = all_names(tree)
    for name, fn in launched_kernels(tree).items():
        order = find_linear_order(fn) or find_2d_order(fn)
        if order is None and name_inline_order(fn, taken):
            order = find_linear_order(fn)
        if order is None or order.pid is None or not isinstance(order.pid, ast.Name) or name not in donor_kernels:
            continue
        pid = order.pid.id
        mine = _mapping_block(fn, pid, order.outer, order.inner)
        theirs = _mapping_block(donor_kernels[name], pid, order.outer, order.inner)
        if mine is None or theirs is None:
            continue
        body, start, end = mine
        dbody, dstart, dend = theirs
        block, donor_block = body[start:end], dbody[dstart:dend]
        if [ast.dump(s) for s in block] == [ast.dump(s) for s in donor_block]:
            continue
        if any(is_call_to(n, "program_id", "num_programs") for s in donor_block for n in ast.walk(s)) \
                and not order.pid_is_program_id:
            continue
        defined, needed = set(), set()
        for s in donor_block:
            needed |= loaded_names(s) - defined
            defined |= stored_names(s)
        later = set().union(set(), *(stored_names(s) for s in body[start:]))
        available = set(arg_names(fn)) | {pid} | _BUILTINS | (stored_names(fn) - later)
        used_later = set().union(set(), *(loaded_names(s) for s in body[end:]))
        lost = (set().union(set(), *(stored_names(s) for s in block)) & used_later) - defined
        missing = needed - available
        new_params = [n for n in missing if n in arg_names(donor_kernels[name]) and n in donor_space]
        if lost or set(missing) - set(new_params):
            continue
        body[start:end] = copy.deepcopy(donor_block)
        for p in sorted(new_params):
            add_template_param(tree, name, p, donor_space[p])
        extra = f" (adds {', '.join(sorted(new_params))})" if new_params else ""
        return Edit(tree, f"{name}: program-id mapping of ({order.outer}, {order.inner}) grafted from the "
                          f"other parent{extra}")
    raise Skip("no row-major kernel whose mapping the other parent does differently with compatible names")


def graft_order(ctx: OpContext) -> Edit:
    """Replace a row-major tile mapping with the other parent's mapping (e.g. grouped order)."""
    other = _other(ctx)
    pairs = [(ctx.module, other), (other, ctx.module)]
    reasons = []
    for recipient, donor in pairs:
        try:
            return _graft(recipient, donor)
        except Skip as exc:
            reasons.append(str(exc))
    raise Skip(reasons[0])


def _signature(fn: ast.FunctionDef) -> list[tuple[str, bool]]:
    return [(a.arg, is_constexpr_arg(a)) for a in fn.args.args] + [("*", bool(fn.args.vararg or fn.args.kwarg))]


def swap_kernel(ctx: OpContext) -> Edit:
    """Put the other parent's version of a same-named, same-signature kernel into this one."""
    other = _other(ctx)
    pairs = [(ctx.module, other), (other, ctx.module)]
    ctx.rng.shuffle(pairs)
    for base, donor in pairs:
        tree = base.clone()
        mine, theirs = jit_functions(tree), jit_functions(donor.tree)
        module_names = {s.name for s in donor.tree.body if isinstance(s, ast.FunctionDef)}
        options = []
        for name, fn in mine.items():
            if name not in theirs or ast.dump(fn) == ast.dump(theirs[name]):
                continue
            if _signature(fn) != _signature(theirs[name]):
                continue
            helpers = (loaded_names(theirs[name]) & module_names) - set(mine) - {name}
            if not helpers:
                options.append(name)
        if not options:
            continue
        name = ctx.rng.choice(sorted(options))
        tree.body[tree.body.index(mine[name])] = copy.deepcopy(jit_functions(donor.tree)[name])
        if ast.dump(tree) in (ast.dump(base.tree), ast.dump(donor.tree)):
            continue
        which = "parent" if base is ctx.module else "inspiration"
        return Edit(tree, f"{name} from the other parent into the {which}'s module (its launch and PARAMS)")
    raise Skip("no same-named kernel with the same signature differs between the parents")


OPERATORS = (
    Operator("cross_params", "crossover", 2.0, cross_params),
    Operator("swap_kernel", "crossover", 2.0, swap_kernel),
    Operator("graft_order", "crossover", 3.0, graft_order),
)
