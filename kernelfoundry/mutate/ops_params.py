"""Template-parameter space edits: grow and shrink power-of-two block sizes, drop
values, add ``num_warps`` / ``num_stages`` values, and promote a promising value to
the default.  Only PARAMS changes; the kernel text stays as written."""

from __future__ import annotations

from typing import Any

from ..candidate import HINT_PARAMS
from .ast_module import Skip, all_names, jit_functions, uses_dot, write_params
from .ops_base import (MAX_VALUES, STAGES, TRACED_KERNEL_CONFIGS, WARPS, Edit, OpContext, Operator,
                       best_params, fit_space, kernel_space_size)

#: Bounds for power-of-two tiles feeding ``tl.dot`` and for 1-D blocks.
DOT_TILE_BOUNDS = (16, 256)
BLOCK_BOUNDS = (16, 1 << 16)
#: Bounds for small power-of-two counts (GROUP_M, ROWS_PER_PROGRAM, ...).
COUNT_BOUNDS = (1, 64)

_BLOCK_TAGS = ("BLOCK", "TILE", "CHUNK")
_COUNT_TAGS = ("GROUP", "ROWS", "PER_PROGRAM", "SPLIT")


def _is_pow2(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0 and v & (v - 1) == 0


def pow2_bounds(ctx: OpContext, name: str) -> tuple[int, int] | None:
    """(low, high) for a power-of-two block/count parameter, None for any other."""
    values = ctx.module.space[name]
    if name in HINT_PARAMS or not all(_is_pow2(v) for v in values):
        return None
    upper = name.upper()
    if any(tag in upper for tag in _BLOCK_TAGS) or upper.endswith("_SIZE"):
        kernels = jit_functions(ctx.module.tree).values()
        feeds_dot = any(uses_dot(k) and name in all_names(k) for k in kernels)
        return DOT_TILE_BOUNDS if feeds_dot else BLOCK_BOUNDS
    if any(tag in upper for tag in _COUNT_TAGS):
        return COUNT_BOUNDS
    return None


def _edited(ctx: OpContext, space: dict[str, list[Any]], keep: str, description: str) -> Edit:
    space = fit_space(space, keep, ctx.rng)
    if space == ctx.module.space:
        raise Skip("space unchanged")
    tree = ctx.module.clone()
    write_params(tree, space)
    return Edit(tree, description)


def _too_wide(space: dict[str, list[Any]], name: str) -> bool:
    return len(space[name]) > MAX_VALUES or \
        (name not in HINT_PARAMS and kernel_space_size(space) > TRACED_KERNEL_CONFIGS)


def _add_value(ctx: OpContext, name: str, value: Any, *, drop_far_end: bool) -> Edit:
    """Add *value* to *name*.  With *drop_far_end*, while the parameter is full or the
    kernel space is wider than the verifier traces, the non-default value farthest
    from *value* goes (the window shifts towards the new value)."""
    space = {k: list(v) for k, v in ctx.module.space.items()}
    values = space[name]
    values.append(value)
    dropped = []
    while drop_far_end and len(values) > 2 and _too_wide(space, name):
        far = max(values[1:-1], key=lambda v: abs(v - value))
        values.remove(far)
        dropped.append(far)
    note = f", dropped {', '.join(map(str, dropped))}" if dropped else ""
    return _edited(ctx, space, name, f"{name}: add {value}{note} -> {values}")


def grow_block(ctx: OpContext) -> Edit:
    """Add a larger power-of-two block size (x2, sometimes x4) within bounds."""
    options = []
    for name, values in ctx.module.space.items():
        bounds = pow2_bounds(ctx, name)
        if bounds and max(values) * 2 <= bounds[1]:
            options.append((name, bounds))
    if not options:
        raise Skip("no power-of-two block parameter below its upper bound")
    name, (_, hi) = ctx.rng.choice(options)
    top = max(ctx.module.space[name])
    step = 4 if top * 4 <= hi and ctx.rng.random() < 0.3 else 2
    return _add_value(ctx, name, top * step, drop_far_end=True)


def shrink_block(ctx: OpContext) -> Edit:
    """Add a smaller power-of-two block size within bounds."""
    options = []
    for name, values in ctx.module.space.items():
        bounds = pow2_bounds(ctx, name)
        if bounds and min(values) // 2 >= bounds[0]:
            options.append(name)
    if not options:
        raise Skip("no power-of-two block parameter above its lower bound")
    name = ctx.rng.choice(options)
    return _add_value(ctx, name, min(ctx.module.space[name]) // 2, drop_far_end=True)


def _add_hint(ctx: OpContext, name: str, allowed: tuple[int, ...]) -> Edit:
    values = ctx.module.space.get(name)
    if values is None:
        raise Skip(f"PARAMS has no {name}")
    missing = [v for v in allowed if v not in values]
    if not missing:
        raise Skip(f"{name} already holds every value in {list(allowed)}")
    if len(values) >= MAX_VALUES:
        raise Skip(f"{name} already holds {MAX_VALUES} values")
    index = {v: i for i, v in enumerate(allowed)}
    present = [index[v] for v in values if v in index]

    def weight(v: int) -> float:
        near = min((abs(index[v] - i) for i in present), default=1)
        return (3.0 if near == 1 else 1.0) * (1.5 if present and index[v] > max(present) else 1.0)

    value = ctx.rng.choices(missing, weights=[weight(v) for v in missing])[0]
    return _add_value(ctx, name, value, drop_far_end=False)


def add_warps(ctx: OpContext) -> Edit:
    """Add a ``num_warps`` value from 1, 2, 4, 8, 16 (neighbours of present ones favoured)."""
    return _add_hint(ctx, "num_warps", WARPS)


def add_stages(ctx: OpContext) -> Edit:
    """Add a ``num_stages`` value from 1..5 (software-pipelining depth)."""
    return _add_hint(ctx, "num_stages", STAGES)


def drop_value(ctx: OpContext) -> Edit:
    """Remove one non-default value (never the model's best value for the parent)."""
    best = best_params(ctx.parent)
    options = [(name, v) for name, values in ctx.module.space.items() if len(values) > 1
               for v in values[1:] if best.get(name) != v]
    if not options:
        raise Skip("no parameter has a removable non-default value")
    name, value = ctx.rng.choice(options)
    space = {k: [x for x in vals if not (k == name and x == value)] for k, vals in ctx.module.space.items()}
    return _edited(ctx, space, name, f"{name}: drop {value} -> {space[name]}")


def promote_default(ctx: OpContext) -> Edit:
    """Make the model's best value (else a larger block, else any other value) the default."""
    space = {k: list(v) for k, v in ctx.module.space.items()}
    best = best_params(ctx.parent)
    moves = [(k, v) for k, v in best.items() if k in space and v in space[k] and space[k][0] != v]
    if moves:
        for name, value in moves:
            space[name].remove(value)
            space[name].insert(0, value)
        desc = ", ".join(f"{k}={v}" for k, v in moves)
        return _edited(ctx, space, moves[0][0], f"default config <- model's best ({desc})")
    options = [k for k, v in space.items() if len(v) > 1]
    if not options:
        raise Skip("no parameter with more than one value")
    name = ctx.rng.choice(options)
    values = space[name]
    bigger = [v for v in values[1:] if isinstance(v, (int, float)) and not isinstance(v, bool)
              and isinstance(values[0], (int, float)) and v > values[0]]
    value = min(bigger) if bigger and ctx.rng.random() < 0.7 else ctx.rng.choice(values[1:])
    values.remove(value)
    values.insert(0, value)
    return _edited(ctx, space, name, f"{name}: default -> {value}")


OPERATORS = (
    Operator("grow_block", "mutate", 3.0, grow_block),
    Operator("shrink_block", "mutate", 1.0, shrink_block),
    Operator("add_warps", "mutate", 1.5, add_warps),
    Operator("add_stages", "mutate", 1.5, add_stages),
    Operator("drop_value", "mutate", 1.0, drop_value),
    Operator("promote_default", "mutate", 1.0, promote_default),
)
