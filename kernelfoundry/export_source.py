"""Make a kernel source default to tuned template parameters, keeping it a valid candidate.

An exported kernel must still pass the verifier (so it can be checked again, or seed a
new task), so nothing is added but comments and literals: each ``PARAMS`` list is
reordered to put the tuned value first (the first value is every kernel's default
config), and ``launch``'s parameters get the tuned values as defaults.  The rest of
the text, formatting and comments included, is left as it is.
"""

from __future__ import annotations

import ast
from typing import Any

from .ast_safe import parse as safe_parse


def _offsets(source: str) -> list[int]:
    """Byte offset of the start of every line of *source* (ast columns count UTF-8 bytes)."""
    starts, total = [0], 0
    for line in source.encode("utf-8").splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _span(node: ast.AST, starts: list[int]) -> tuple[int, int]:
    return (starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset)


def _reordered(values: list[Any], first: Any) -> list[Any]:
    return [first, *(v for v in values if v != first)] if first in values else list(values)


def tuned_source(source: str, params: dict[str, Any]) -> tuple[str, list[str]]:
    """*source* with *params* as its defaults; also the names ``launch`` could not default.

    A positional ``launch`` parameter gets a default only when every parameter after it
    gets one too (Python's rule); the names left without are returned for the header.
    """
    tree = safe_parse(source)
    starts = _offsets(source)
    edits: list[tuple[int, int, str]] = []
    launch = None
    for stmt in tree.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else getattr(
            stmt, "target", None)
        if isinstance(target, ast.Name) and target.id == "PARAMS" and isinstance(stmt.value, ast.Dict):
            space = ast.literal_eval(stmt.value)
            new = {name: _reordered(list(values), params[name]) if name in params else values
                   for name, values in space.items()}
            edits.append((*_span(stmt.value, starts), repr(new)))
        elif isinstance(stmt, ast.FunctionDef) and stmt.name == "launch":
            launch = stmt
    missing = []
    if launch is not None:
        a = launch.args
        for arg, default in zip(a.kwonlyargs, a.kw_defaults):
            if arg.arg in params:
                edits.append(_default_edit(arg, default, params[arg.arg], starts))
        positional = [*a.posonlyargs, *a.args]
        defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
        settable = True
        for arg, default in reversed(list(zip(positional, defaults))):
            settable = settable and (arg.arg in params or default is not None)
            if arg.arg in params:
                if settable:
                    edits.append(_default_edit(arg, default, params[arg.arg], starts))
                else:
                    missing.append(arg.arg)
        named = {arg.arg for arg in [*a.kwonlyargs, *positional]}
        if a.kwarg is None:
            missing += [name for name in params if name not in named]
    data = source.encode("utf-8")
    for start, end, text in sorted(edits, reverse=True):
        data = data[:start] + text.encode("utf-8") + data[end:]
    out = data.decode("utf-8")
    compile(out, "<exported kernel>", "exec")                    # the edits keep it valid Python
    return out, sorted(set(missing))


def _default_edit(arg: ast.arg, default: ast.expr | None, value: Any, starts: list[int]) -> tuple[int, int, str]:
    if default is not None:
        return (*_span(default, starts), repr(value))
    end = _span(arg, starts)[1]                                  # after the name (and its annotation)
    return (end, end, f"={value!r}" if arg.annotation is None else f" = {value!r}")
