"""Kernel candidates: source text, its template-parameter space, and config enumeration.

A candidate is a Python module with ``PARAMS`` (name -> list of values), one or
more ``@triton.jit`` kernels and ``launch(*inputs, **params)``; see
``docs/candidate_format.md``.  Everything here reads source statically (AST,
``literal_eval``): generated code never runs in the driver.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import random
import re
from dataclasses import dataclass, field
from typing import Any

from .ast_safe import parse as safe_parse

#: Launch options Triton itself consumes; they do not change what the interpreter
#: computes, so the trace is shared across them and the model sweeps them.
HINT_PARAMS = ("num_warps", "num_stages")


def source_hash(source: str) -> str:
    """Identity of a kernel source, insensitive to trailing whitespace."""
    norm = "\n".join(line.rstrip() for line in source.strip().splitlines())
    return hashlib.sha256(norm.encode()).hexdigest()[:32]


def verify_seed(source: str) -> int:
    """The verifier's seed for *source* (inputs, sampled configs, trace samples): a function of the
    source alone, so a kernel's verdict and objective are the same in every run, in ``verify`` and in a
    cache.  It ignores the PARAMS values (:func:`code_text`): a kernel that differs only in them is
    checked and traced with the same draws, so the configs it shares with it need no new trace."""
    return int(source_hash(code_text(source) or source)[:8], 16)


#: Names through which code could reach its own module's PARAMS without writing ``PARAMS``.
_REFLECTION = frozenset({"getattr", "globals", "vars", "locals", "eval", "exec", "compile", "__import__",
                         "sys", "inspect", "importlib", "__dict__", "__globals__", "__builtins__"})


def code_text(source: str) -> str | None:
    """What of *source* runs, PARAMS values aside: its syntax tree with the PARAMS literal replaced
    by ``{}``, every node's line and column as Python parsed them (the trace's branch arms are
    numbered by line), or None when the code could read PARAMS: a second binding, any other
    mention (a name, an attribute, a string but a docstring) or a reflective name.  Then PARAMS's
    values may steer what the code does, and only the whole source identifies what runs.

    Built from the tree, not by cutting the text: a text cut must agree with Python on what a
    line break is (``str.splitlines`` also breaks at form feeds and other separators, which let
    the cut land on kernel code), and a tree has no such choice to make.
    """
    try:
        tree = safe_parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    bindings = [stmt for stmt in tree.body
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "PARAMS")]
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    inside = {id(n) for n in ast.walk(binding)}
    inside |= {id(stmt.value) for stmt in ast.walk(tree) if isinstance(stmt, ast.Expr)
               and isinstance(stmt.value, ast.Constant)}           # docstrings: never used as values
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name == "PARAMS" or name in _REFLECTION or (isinstance(node, ast.Constant) and isinstance(
                node.value, str) and "PARAMS" in node.value):
            return None
    text = _text_without(source, binding.value)
    if text is None:
        return None
    # the literal's own end column varies with its values; every position after it is in the
    # dump anyway, so the statement keeps its lines and loses its end column
    binding.value = ast.copy_location(ast.Dict(keys=[], values=[]), binding.value)
    for node in (binding, binding.value):
        node.end_col_offset = 0
    try:
        return ast.dump(tree, include_attributes=True) + "\n" + text
    except RecursionError:
        return None


def _text_without(source: str, value: ast.expr) -> str | None:
    """*source* with the text of *value* replaced by ``{}``, or None unless that cut is exactly the
    literal: comments, escapes and declarations are text the tree does not hold, and Triton reads
    kernels as text, so the key holds the text too."""
    if re.search(r"\r(?!\n)|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", source):
        return None                  # lines Python and other readers would count differently
    lines = source.split("\n")

    def offset(lineno: int, col_bytes: int) -> int:
        line = lines[lineno - 1]
        return sum(len(l) + 1 for l in lines[:lineno - 1]) + len(line.encode()[:col_bytes].decode(errors="strict"))

    try:
        start, end = offset(value.lineno, value.col_offset), offset(value.end_lineno, value.end_col_offset)
        cut = ast.parse(source[start:end].strip(), mode="eval").body
    except (IndexError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None
    if ast.dump(cut) != ast.dump(value):
        return None
    return source[:start] + "{}" + "\n" * source[start:end].count("\n") + source[end:]


class ParamSpaceError(ValueError):
    """``PARAMS`` is missing or malformed."""


def parse_param_space(source: str) -> dict[str, list[Any]]:
    """Read the module-level ``PARAMS`` literal from *source* without running it."""
    try:
        tree = safe_parse(source)
    except SyntaxError as exc:
        raise ParamSpaceError(f"source does not parse: line {exc.lineno}: {exc.msg}") from None
    node = None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PARAMS" for t in stmt.targets):
            node = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "PARAMS":
            node = stmt.value
    if node is None:
        raise ParamSpaceError("module defines no top-level PARAMS = {name: [values, ...]}")
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):   # e.g. {[1]: [2]}: unhashable
        raise ParamSpaceError("PARAMS must be a literal dict of name -> list of int/float/str/bool values") from None
    return validate_param_space(value)


def validate_param_space(value: Any) -> dict[str, list[Any]]:
    """Check that *value* is ``{identifier: [scalar, ...]}`` with no duplicates."""
    if not isinstance(value, dict) or not value:
        raise ParamSpaceError("PARAMS must be a non-empty dict of name -> list of values")
    out: dict[str, list[Any]] = {}
    for name, values in value.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ParamSpaceError(f"PARAMS key {name!r} is not an identifier")
        if not isinstance(values, (list, tuple)) or not values:
            raise ParamSpaceError(f"PARAMS[{name!r}] must be a non-empty list of values")
        for v in values:
            if not isinstance(v, (int, float, str, bool)):
                raise ParamSpaceError(f"PARAMS[{name!r}] holds {v!r}; only int/float/str/bool values")
        if len(set(values)) != len(values) or len({str(v) for v in values}) != len(values):
            raise ParamSpaceError(f"PARAMS[{name!r}] has duplicate values {list(values)} (values that read "
                                  "the same, like 1024 and '1024', name the same config)")
        for v in values:
            if isinstance(v, str) and ("," in v or "=" in v):
                raise ParamSpaceError(f"PARAMS[{name!r}] holds {v!r}; a string value may not contain ',' or '='")
        if name in ("num_warps",) and not all(_is_int(v) and v > 0 and v & (v - 1) == 0 for v in values):
            raise ParamSpaceError(f"PARAMS['num_warps'] must be powers of two; got {list(values)}")
        if name in ("num_stages",) and not all(_is_int(v) and 1 <= v <= 8 for v in values):
            raise ParamSpaceError(f"PARAMS['num_stages'] must be ints in 1..8; got {list(values)}")
        out[name] = list(values)
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def space_size(space: dict[str, list[Any]]) -> int:
    n = 1
    for values in space.values():
        n *= len(values)
    return n


def default_config(space: dict[str, list[Any]]) -> dict[str, Any]:
    """The default config: the first value of every parameter."""
    return {name: values[0] for name, values in space.items()}


def enumerate_configs(space: dict[str, list[Any]], *, cap: int, seed: int = 0,
                      names: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """All configs of *space* (restricted to *names*) up to *cap*; a seeded sample beyond.

    The default config is always first.  Order is deterministic for a given seed.
    """
    names = tuple(n for n in space if names is None or n in names)
    sub = {n: space[n] for n in names}
    total = space_size(sub)
    first = {n: sub[n][0] for n in names}
    if total <= cap:
        configs = [dict(zip(names, combo)) for combo in itertools.product(*(sub[n] for n in names))]
        configs.remove(first)
        return [first] + configs
    rng = random.Random(seed)
    seen = {tuple(first[n] for n in names)}
    out = [first]
    while len(out) < cap:
        combo = tuple(rng.choice(sub[n]) for n in names)
        if combo not in seen:
            seen.add(combo)
            out.append(dict(zip(names, combo)))
    return out


def kernel_configs(space: dict[str, list[Any]], *, cap: int, seed: int = 0) -> list[dict[str, Any]]:
    """Configs of the parameters that change what the kernel computes (not the hints)."""
    names = tuple(n for n in space if n not in HINT_PARAMS)
    return enumerate_configs(space, cap=cap, seed=seed, names=names)


def config_key(config: dict[str, Any]) -> str:
    """A stable, readable key for a config, e.g. ``BLOCK_M=64,BLOCK_N=128``."""
    return ",".join(f"{k}={config[k]}" for k in sorted(config))


@dataclass
class Candidate:
    """A kernel source with its lineage, as the search sees it (before verification)."""

    source: str
    parent_ids: tuple[int, ...] = ()
    mutator: str = "seed"
    description: str = ""
    prompt_id: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def param_space(self) -> dict[str, list[Any]]:
        return parse_param_space(self.source)
