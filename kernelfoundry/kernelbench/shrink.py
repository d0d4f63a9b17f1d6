"""Size symbols of an imported problem and its small check shapes (pure Python, no torch).

Every tensor dimension larger than :data:`KEEP_AT_MOST` becomes a symbol; dimensions with
the same value share one (a matmul's K, a Linear's in_features and its input's last dim),
smaller ones stay literal (a broadcast 1, 3 channels, 16 heads).  Check shapes shrink each
symbol to a small value that keeps its traits: the residue mod 16 (so odd stays odd, a
multiple of 16 stays one and a non-multiple stays not) and divisibility by the problem's
small integer constructor arguments (GroupNorm's group count).
"""

from __future__ import annotations

import math
from typing import Any

KEEP_AT_MOST = 16          # dims up to this size stay literal
CHECK_CAPS = (6_000, 40_000)  # largest tensor (elements) at each check shape
HARD_CAP = 1 << 20         # beyond this (a 3D volume of a size kept divisible by 3), divisibility yields


def assign_symbols(shapes: dict[str, list[int]], literal: set[tuple[str, int]] = frozenset(),
                   ident: Any = None) -> tuple[dict[str, int], dict[str, list[int | str]]]:
    """(symbol -> target value, input -> symbolic shape).  Symbols are named ``<input>_<dim>``
    after the first input dim of their key.  Dims at the *literal* positions ``(input,
    dim)`` stay literal whatever their size (a size the Model fixes, such as a channel count
    written inside its constructor).  Without *ident* (an :class:`.identity.Identity`) dims of
    equal value share a symbol; with it, dims share one where they share a key (a free global
    of the problem, else their value), and keys in ``ident.small`` get a symbol at any size."""
    by_key: dict[Any, str] = {}
    symbols: dict[str, int] = {}
    symbolic: dict[str, list[int | str]] = {}
    for name, shape in shapes.items():
        dims: list[int | str] = []
        for i, d in enumerate(shape):
            key = ident.key(name, i, d) if ident is not None else ("v", d)
            small = ident is not None and key in ident.small
            if (d > KEEP_AT_MOST or small) and (name, i) not in literal:
                if key not in by_key:
                    by_key[key] = f"{name}_{i}"
                    symbols[by_key[key]] = d
                dims.append(by_key[key])
            else:
                dims.append(d)
        symbolic[name] = dims
    return symbols, symbolic


def symbol_keys(shapes: dict[str, list[int]], symbolic: dict[str, list[int | str]], ident: Any = None
                ) -> dict[Any, str]:
    """key -> symbol, read back off :func:`assign_symbols`'s result."""
    out: dict[Any, str] = {}
    for name, shape in shapes.items():
        for i, (d, s) in enumerate(zip(shape, symbolic[name])):
            if isinstance(s, str):
                out.setdefault(ident.key(name, i, d) if ident is not None else ("v", d), s)
    return out


def symbolize(value: Any, symbols: dict[str, int], init_keys: dict[Any, str] | None = None,
              ident: Any = None, path: tuple[int, ...] = ()) -> Any:
    """*value* (a JSON-like constructor argument) with ints equal to a symbol's value as
    ``{"sym": name}``; lists stay lists, tuples are ``{"tuple": [...]}``.  With *init_keys*
    (key -> symbol) and *ident*, an int at *path* becomes the symbol of its key (a free global's,
    else its value's) instead."""
    if isinstance(value, bool) or value is None or isinstance(value, (float, str)):
        return value
    if isinstance(value, int):
        if init_keys is not None:
            sym = init_keys.get(ident.init.get(path, ("v", value)))
            return {"sym": sym} if sym is not None else value
        by_value = {v: s for s, v in symbols.items()}
        return {"sym": by_value[value]} if value in by_value else value
    if isinstance(value, dict) and set(value) == {"tuple"}:
        return {"tuple": [symbolize(v, symbols, init_keys, ident, path + (i,)) for i, v in enumerate(value["tuple"])]}
    if isinstance(value, list):
        return [symbolize(v, symbols, init_keys, ident, path + (i,)) for i, v in enumerate(value)]
    return value


def constants_in(value: Any) -> list[int]:
    """The plain ints (not symbols, not bools) inside a symbolized value."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        return [c for v in value.get("tuple", []) for c in constants_in(v)]
    if isinstance(value, list):
        return [c for v in value for c in constants_in(v)]
    return []


def ladder(value: int, divisors: list[int], at_least: int = 2) -> list[int]:
    """Small sizes (from *at_least* up) with *value*'s residue mod 16 and its small divisors among
    *divisors*, ascending (they may exceed a small *value*: a second size is needed to tell sizes
    from constants)."""
    need = 1
    for d in divisors:
        if 1 < d <= 256 and value % d == 0:
            need = math.lcm(need, d)
    if value // need >= 2:          # a group of one (8192 channels in 16 groups shrunk to 16) is degenerate:
        at_least = max(at_least, 2 * need)     # GroupNorm divides by a zero spread; keep two per group
    r = value % 16
    out = []
    start = r if r >= 2 else r + 16
    while start < at_least:
        start += 16
    for s in range(start, 16 * 40, 16):
        if s % need == 0:
            out.append(s)
        if len(out) == 6:
            break
    return out or [value]


def check_shapes(symbols: dict[str, int], shapes: dict[str, list[int | str]],
                 divisors: list[int], at_least: int = 2) -> list[dict[str, int]]:
    """Two check environments: small, then larger, each capped by :data:`CHECK_CAPS` elements
    per tensor.  Different symbols get different rungs where possible (catches swapped dims).
    Sizes start at *at_least* (a dilated kernel needs a wide enough input)."""
    ladders = {s: ladder(v, divisors, at_least) for s, v in symbols.items()}
    envs = []
    for level, cap in enumerate(CHECK_CAPS):
        rung = {s: min(len(ladders[s]) - 1, 2 * level + i % 2) for i, s in enumerate(ladders)}

        def env() -> dict[str, int]:
            return {s: ladders[s][rung[s]] for s in ladders}

        def size(e: dict[str, int], dims: list[int | str]) -> int:
            return math.prod(e[d] if isinstance(d, str) else d for d in dims)

        def biggest(e: dict[str, int]) -> str | None:
            """The largest symbol still above rung 0 of the largest tensor over the cap that has one."""
            best, who = cap, None
            for dims in shapes.values():
                syms = [d for d in dims if isinstance(d, str) and rung[d] > 0]
                n = size(e, dims)
                if n > best and syms:
                    best, who = n, max(syms, key=lambda d: e[d])
            return who

        e = env()
        while (who := biggest(e)) is not None:
            rung[who] -= 1
            e = env()
        while True:                 # still huge at the lowest rungs (a 3D volume of a size kept divisible
            huge = {d for dims in shapes.values() if size(e, dims) > HARD_CAP for d in dims if isinstance(d, str)}
            loose = [s for s in huge if ladders[s][0] > ladder(symbols[s], [], at_least)[0]]  # by 3): drop divisors
            if not loose:
                break
            who = max(loose, key=lambda s: e[s])
            ladders[who], rung[who] = ladder(symbols[who], [], at_least), 0
            e = env()
        envs.append(e)
    if envs[0] == envs[1]:
        envs.pop()
    return envs


def resolve(value: Any, env: dict[str, int]) -> Any:
    """A symbolized value with the symbols of *env* put back (tuples as tuples)."""
    if isinstance(value, dict) and "sym" in value:
        return env[value["sym"]]
    if isinstance(value, dict) and "tuple" in value:
        return tuple(resolve(v, env) for v in value["tuple"])
    if isinstance(value, list):
        return [resolve(v, env) for v in value]
    return value


def render(value: Any) -> str:
    """Python source of a symbolized value, reading symbols from a dict named ``env``."""
    if isinstance(value, dict) and "sym" in value:
        return f"env[{value['sym']!r}]"
    if isinstance(value, dict) and "tuple" in value:
        items = [render(v) for v in value["tuple"]]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value)
