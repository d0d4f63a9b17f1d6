"""What every part of the hack gate shares: the :class:`Violation` record and :func:`dotted`.

:mod:`anticheat` (the language rules, and the gate that runs them all) and :mod:`anticheat_host`
(the host-compute rules) both report violations and read dotted names; both take them from here,
so the host rules need nothing of the module that runs them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One broken rule: where, which rule, and why (for the LLM)."""

    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
