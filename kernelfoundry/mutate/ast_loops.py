"""Loop-level rewrites on kernel ASTs: recognise block loops over a row, peel loops
that run exactly once, and drop recomputed assignments (common-subexpression
elimination at statement granularity)."""

from __future__ import annotations

import ast

from .ast_module import is_call_to, loaded_names, statement_lists, stored_names

#: Calls with effects on memory or control: loads are not reused across them.
_EFFECTS = ("store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
            "atomic_and", "atomic_or", "atomic_xor", "debug_barrier", "device_print",
            "device_assert", "static_print", "print")
#: Calls whose result changes with the memory they read.
_READS = ("load",)


def block_loop(loop: ast.stmt, block: str) -> str | None:
    """The bound N of ``for v in range(0, N, BLOCK)`` / ``range(tl.cdiv(N, BLOCK))`` /
    ``range(0, tl.cdiv(N, BLOCK))`` (N a plain name), or None."""
    if not isinstance(loop, ast.For) or loop.orelse or not isinstance(loop.target, ast.Name):
        return None
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range") or it.keywords:
        return None
    args = it.args
    zero = lambda e: isinstance(e, ast.Constant) and e.value == 0  # noqa: E731
    if len(args) == 3 and zero(args[0]) and isinstance(args[2], ast.Name) and args[2].id == block \
            and isinstance(args[1], ast.Name):
        return args[1].id
    count = args[-1] if len(args) == 1 or (len(args) == 2 and zero(args[0])) else None
    if count is not None and is_call_to(count, "cdiv") and len(count.args) == 2 \
            and isinstance(count.args[0], ast.Name) and isinstance(count.args[1], ast.Name) \
            and count.args[1].id == block:
        return count.args[0].id
    return None


def peel_single_trip(fn: ast.FunctionDef, block: str) -> int:
    """Replace every block loop over *block* by its body with the index bound to 0.

    Valid when ``BLOCK >= N`` at run time (one trip).  Returns the number peeled.
    """
    peeled = 0
    changed = True
    while changed:
        changed = False
        for body in statement_lists(fn):
            for i, stmt in enumerate(body):
                if block_loop(stmt, block) is not None:
                    init = ast.Assign(targets=[ast.Name(id=stmt.target.id, ctx=ast.Store())],
                                      value=ast.Constant(value=0), lineno=stmt.lineno)
                    body[i:i + 1] = [init] + stmt.body
                    peeled += 1
                    changed = True
                    break
            if changed:
                break
    return peeled


def _has_call(node: ast.AST, names: tuple[str, ...]) -> bool:
    return any(is_call_to(n, *names) for n in ast.walk(node))


def drop_recomputations(fn: ast.FunctionDef) -> int:
    """Remove ``x = E`` when an identical earlier ``x = E`` in the same statement list
    still holds (neither x nor anything E reads was reassigned, and no store ran
    between when E loads).  Returns the number of statements removed."""
    removed = 0
    for body in statement_lists(fn):
        available: dict[str, ast.Assign] = {}
        keep = []
        for stmt in body:
            key = ast.dump(stmt)
            if isinstance(stmt, ast.Assign) and key in available:
                removed += 1
                continue
            keep.append(stmt)
            written = stored_names(stmt)
            effects = _has_call(stmt, _EFFECTS)
            for k in list(available):
                a = available[k]
                reads = loaded_names(a.value) | stored_names(a)
                if reads & written or (effects and _has_call(a.value, _READS)):
                    del available[k]
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id not in loaded_names(stmt.value) and not _has_call(stmt.value, _EFFECTS):
                available[key] = stmt
        body[:] = keep
    return removed
