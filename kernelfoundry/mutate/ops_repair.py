"""Repairs for a parent that failed a verifier gate (request kind "fix").

* ``drop_failing_values``: values the verifier's feedback names (``BLOCK_N=1024``,
  ``'BLOCK_N': 1024``) leave PARAMS.
* ``shrink_space``: after resource or trace/model failures, the largest value of
  each power-of-two block parameter goes (smaller tiles fit on chip).
* ``narrow_to_default``: every parameter keeps only its default value.
* ``drop_row_variant``: a single-pass ``*_row`` kernel and its dispatch in
  ``launch`` (added by ``whole_row``) are removed again.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from .ast_module import Skip, jit_functions, launch_function, loaded_names, write_params
from .ops_base import Edit, OpContext, Operator, check_space
from .ops_params import COUNT_BOUNDS, pow2_bounds
from .ops_wholerow import ROW_BLOCK_LIMIT

_RESOURCE_WORDS = ("shared memory", "smem", "out of resources", "register", "capacity", "too large",
                   "exceeds", "unified buffer", "spill", "infeasible", "no valid config")


def _value_pattern(name: str) -> re.Pattern:
    return re.compile(r"['\"]?\b" + re.escape(name) + r"\b['\"]?\s*[:=]\s*(['\"]?[\w.+-]+['\"]?)")


def _parse_value(text: str, like: list[Any]) -> Any:
    text = text.strip("'\"")
    for v in like:
        if str(v) == text:
            return v
    return None


def drop_failing_values(ctx: OpContext) -> Edit:
    """Remove the parameter values the failing gate's feedback names: the non-default
    ones when there are any (a non-default config failed), else the defaults."""
    feedback = re.sub(r"\{[^{}]*\}", "", ctx.parent.feedback or "")   # shapes like {M=7, N=129}
    space = {k: list(v) for k, v in ctx.module.space.items()}
    named = []
    for name, values in space.items():
        for match in _value_pattern(name).finditer(feedback):
            value = _parse_value(match.group(1), values)
            if value is not None and len(values) > 1 and (name, value) not in named:
                named.append((name, value))
    non_default = [(n, v) for n, v in named if space[n][0] != v]
    dropped = []
    for name, value in non_default or named:
        if value in space[name] and len(space[name]) > 1:
            space[name].remove(value)
            dropped.append(f"{name}={value}")
    if not dropped:
        raise Skip("feedback names no removable parameter value")
    tree = ctx.module.clone()
    write_params(tree, space)
    return Edit(tree, f"repair: dropped failing values {', '.join(dropped)}")


def shrink_space(ctx: OpContext) -> Edit:
    """Drop the largest value of every power-of-two block parameter (resource failures)."""
    text = (ctx.parent.feedback or "").lower()
    if ctx.parent.gate not in ("trace", "model") and not any(w in text for w in _RESOURCE_WORDS):
        raise Skip("failure does not look like a resource or size problem")
    space = {k: list(v) for k, v in ctx.module.space.items()}
    dropped = []
    for name, values in space.items():
        bounds = pow2_bounds(ctx, name)
        if bounds and bounds != COUNT_BOUNDS and len(values) > 1:
            big = max(values)
            values.remove(big)
            dropped.append(f"{name}={big}")
    if not dropped:
        raise Skip("no block parameter with more than one value")
    tree = ctx.module.clone()
    write_params(tree, space)
    return Edit(tree, f"repair: dropped the largest block sizes {', '.join(dropped)}")


def narrow_to_default(ctx: OpContext) -> Edit:
    """Keep only each parameter's default value."""
    space = {k: v[:1] for k, v in ctx.module.space.items()}
    if space == ctx.module.space:
        raise Skip("every parameter already has a single value")
    check_space(space)
    tree = ctx.module.clone()
    write_params(tree, space)
    return Edit(tree, "repair: narrowed PARAMS to the default config")


def _row_dispatch(stmt: ast.stmt, kernels: dict[str, ast.FunctionDef]) -> str | None:
    """The ``*_row`` kernel a ``whole_row`` dispatch launches, or None."""
    if not (isinstance(stmt, ast.If) and len(stmt.orelse) == 1 and isinstance(stmt.test, ast.Compare)):
        return None
    test = stmt.test
    if not (len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == ROW_BLOCK_LIMIT):
        return None
    launched = [n.func.value.id for s in stmt.body for n in ast.walk(s)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
                and isinstance(n.func.value, ast.Name) and n.func.value.id in kernels]
    return launched[0] if len(launched) == 1 and launched[0].endswith("_row") else None


def drop_row_variant(ctx: OpContext) -> Edit:
    """Undo ``whole_row``: launch the looping kernel always and delete the single-pass copy."""
    tree = ctx.module.clone()
    launch = launch_function(tree)
    kernels = jit_functions(tree)
    for i, stmt in enumerate(launch.body):
        row = _row_dispatch(stmt, kernels)
        if row is None:
            continue
        launch.body[i] = stmt.orelse[0]
        still_used = any(row in loaded_names(s) for s in tree.body if s is not kernels[row])
        if not still_used:
            tree.body.remove(kernels[row])
        return Edit(tree, f"repair: removed the single-pass variant {row}")
    raise Skip("no single-pass row variant to remove")


OPERATORS = (
    Operator("drop_failing_values", "fix", 5.0, drop_failing_values),
    Operator("drop_row_variant", "fix", 3.0, drop_row_variant),
    Operator("shrink_space", "fix", 2.0, shrink_space),
    Operator("narrow_to_default", "fix", 1.0, narrow_to_default),
)
