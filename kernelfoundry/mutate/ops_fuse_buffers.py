"""How the epilogue fusions read a buffer's address and allocation, for :mod:`.ops_fuse` and its helpers.

:func:`pointer_offset` takes the offset out of a ``pointer + offset`` address (summands in any
order); :func:`_allocation` finds the one ``torch.empty/zeros(shape, ...)`` statement in ``launch``
that allocates a buffer, and :func:`_dims` reads its literal shape.  :mod:`.ops_fuse` (the fusion),
:mod:`.ops_fuse_views` (its preparation of strided reads) and :mod:`.ops_fuse_reduce` use them.
"""

from __future__ import annotations

import ast

from .ast_module import Skip, is_call_to, loaded_names

_ALLOCATORS = ("empty", "zeros")


def _add_terms(expr: ast.expr) -> list[ast.expr]:
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _add_terms(expr.left) + _add_terms(expr.right)
    return [expr]


def pointer_offset(address: ast.expr, pointer: str) -> ast.expr | None:
    """The offset in ``pointer + offset`` (any order of the summands), or None."""
    terms = _add_terms(address)
    bases = [t for t in terms if isinstance(t, ast.Name) and t.id == pointer]
    if len(bases) != 1 or len(terms) < 2 or any(pointer in loaded_names(t) for t in terms if t is not bases[0]):
        return None
    rest = [t for t in terms if t is not bases[0]]
    offset = rest[0]
    for t in rest[1:]:
        offset = ast.BinOp(left=offset, op=ast.Add(), right=t)
    return offset


def _allocation(launch: ast.FunctionDef, name: str) -> tuple[ast.stmt, ast.Call]:
    """The single ``name = torch.empty/zeros(shape, ...)`` statement at the top of ``launch``."""
    found = [s for s in launch.body if isinstance(s, ast.Assign) and len(s.targets) == 1
             and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name]
    stores = sum(1 for n in ast.walk(launch) if isinstance(n, ast.Name) and n.id == name
                 and not isinstance(n.ctx, ast.Load))
    if len(found) != 1 or stores != 1 or not is_call_to(found[0].value, *_ALLOCATORS) \
            or not found[0].value.args:
        raise Skip(f"{name} is not allocated once in launch() with torch.empty/zeros(shape)")
    return found[0], found[0].value


def _dims(call: ast.Call) -> list[ast.expr]:
    """The literal shape (any rank >= 2) of an allocation."""
    shape = call.args[0]
    if isinstance(shape, (ast.Tuple, ast.List)) and len(shape.elts) >= 2 \
            and not any(isinstance(e, ast.Starred) for e in shape.elts):
        return list(shape.elts)
    raise Skip("intermediate is not allocated with a literal shape of rank 2 or more")
