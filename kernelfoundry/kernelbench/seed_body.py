"""One fused pointwise kernel's expression part (:class:`_Body`), for the seed generator and its lowerings.

The generator (:mod:`.seedgen`) and the template lowerings beyond its core ones (:mod:`.lowerings`:
:mod:`.seed_attention`, :mod:`.seed_misc`) both build kernel bodies from the traced graph's pointwise
nodes; a body reads the graph through the generator (:class:`.seedgen._Gen`) it is given.
"""

from __future__ import annotations

import ast
from typing import Any

from .noseed import NoSeed
from .ops import CASTS, CONSTANTS, FLOAT, POINTWISE, TL_DTYPE


def _base(op: str) -> str:
    if op == "<built-in function getitem>":
        return "getitem"
    parts = op.split(".")
    return parts[1] if len(parts) > 1 else op


def _is_literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
        return True
    except (ValueError, SyntaxError):
        return text in ("float('inf')", "float('-inf')", "float('nan')")


class _Body:
    """The expression part of one kernel: its leaf tensors (loaded as ``a{k}``), its launch-time
    constants (``c{j}``) and the lines computing virtual pointwise values (``v{node}``)."""

    def __init__(self, gen: Any):
        self.gen = gen
        self.leaves: list[dict[str, Any]] = []
        self.consts: list[str] = []
        self.lines: list[str] = []
        self.done: set[int] = set()

    def leaf(self, v: dict[str, Any]) -> str:
        if v not in self.leaves:
            self.leaves.append(v)
        k = self.leaves.index(v)
        return f"a{k}.to(tl.float32)" if v["dtype"] in FLOAT else f"a{k}"

    def const(self, text: str) -> str:
        if _is_literal(text):
            return text
        self.consts.append(text)
        return f"c{len(self.consts) - 1}"

    def operand(self, x: Any, y: Any) -> str:
        if isinstance(x, dict) and "ref" in x:
            v = self.gen.vals.get(x["ref"])
            if v is None:
                raise NoSeed(f"value {x['ref']} is used before it is computed")
            if v["kind"] == "scalar":
                return self.const(v["text"])
            if v["kind"] == "expr":
                return self.expr(x["ref"])
            if v["kind"] == "tensor":
                return self.leaf(v)
            raise NoSeed(f"a pointwise op takes a {v['kind']}")
        if isinstance(x, dict) and "dtype" in x:
            return TL_DTYPE.get(x["dtype"], "tl.float32")
        if isinstance(x, list):
            raise NoSeed("a pointwise op takes a list argument")
        return self.const(self.gen.num(x, y))

    def expr(self, i: int) -> str:
        """``v{i}``, with the lines computing it (and what it depends on) added once."""
        if i in self.done:
            return f"v{i}"
        node, other = self.gen.g[i], self.gen.h[i]
        base = _base(node["op"])
        if base in CONSTANTS:
            value = node["args"][-1] if base in ("full", "scalar_tensor", "full_like") else \
                (0 if base == "zeros_like" else 1)
            other_value = other["args"][-1] if base in ("full", "scalar_tensor", "full_like") else value
            expr = self.const(self.gen.num(value, other_value))
            if _is_literal(expr):                         # a Python number has no .to(): a 0-d tensor
                expr = f"tl.full([], {expr}, {TL_DTYPE.get(node['dtype'], 'tl.float32')})"
        else:
            args = [self.operand(x, y) for x, y in zip(node["args"], other["args"])]
            kw = {k: self.operand(v, other["kwargs"][k]) for k, v in node.get("kwargs", {}).items()
                  if k in ("alpha", "min", "max") and v is not None}
            if base in CASTS:
                expr = f"{args[0]}.to({TL_DTYPE[node['dtype']]})"
            elif node.get("kwargs", {}).get("rounding_mode"):
                raise NoSeed(f"{node['op']} with rounding_mode is not supported by the seed generator")
            else:
                expr = POINTWISE[base](args, kw)
        if node["dtype"] in FLOAT and base not in CASTS:
            expr = f"({expr}).to(tl.float32)"
        self.lines.append(f"v{i} = {expr}")
        self.done.add(i)
        return f"v{i}"
