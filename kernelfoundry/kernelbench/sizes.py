"""Which integers of a traced graph are sizes: compare two traces taken at different shapes.

A number that is the same in both traces is a constant; one that changes must be a
product of size symbols times a constant (a view's ``B * F``, a mean's divisor ``C * W``)
or its reciprocal (or a sum of two or three sizes: a ``cat``'s output length).  :func:`size_expr`
finds the shortest such product and renders it as
Python over locals named ``S_<symbol>``.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction


class SizeError(ValueError):
    """A number changes between the traces but is no product of size symbols."""


def size_expr(a: float, b: float, env_a: dict[str, int], env_b: dict[str, int], symbols: list[str]) -> str:
    """Python source for the number that is *a* at *env_a* and *b* at *env_b*: a constant, or
    ``q * S_x * S_y`` with a rational q (a group size ``C // G``), or the reciprocal of one."""
    if a == b or (a != a and b != b):           # NaN != NaN: still one constant
        return _literal(a)
    found = []                                  # (rank: plainer first, text)
    for inverse in (False, True):
        if inverse and not (a and b):
            continue
        fa, fb = (Fraction(v).limit_denominator(1 << 32) for v in (a, b))
        x, y = (1 / fa, 1 / fb) if inverse else (fa, fb)
        for k in range(1, 5 if symbols else 1):
            for combo in itertools.combinations_with_replacement(symbols, k):
                pa, pb = math.prod(env_a[s] for s in combo), math.prod(env_b[s] for s in combo)
                q = (x / pa).limit_denominator(1 << 20)
                if q == 0 or q != (y / pb).limit_denominator(1 << 20) or q * pa != x or q * pb != y:
                    continue
                body = " * ".join(f"S_{s}" for s in combo)
                if q.numerator != 1:
                    body = f"{q.numerator} * {body}"
                integral = isinstance(a, int) and not inverse
                if q.denominator != 1:
                    body = f"({body}) // {q.denominator}" if integral else f"({body}) / {q.denominator}"
                text = f"(1.0 / ({body}))" if inverse else body if integral else f"float({body})"
                # plainer first: no reciprocal, no fraction, no factor, fewer sizes, then the smaller
                # factor (C * D * H * W / 8 over 15/128 * N * C * H * W, which fit two shapes by chance)
                found.append(((inverse, q.denominator != 1, q != 1, k, q.numerator * q.denominator), text))
    if found:
        return min(found)[1]
    offsets = []                                # a size plus a small constant: an exclusive scan's n - 1
    for k, combo in ((k, c) for k in range(1, 3) for c in itertools.combinations_with_replacement(symbols, k)):
        pa, pb = math.prod(env_a[s] for s in combo), math.prod(env_b[s] for s in combo)
        c = a - pa
        if c and abs(c) <= 16 and c == int(c) and b == pb + c:
            offsets.append((abs(c), k, combo, int(c)))
    if offsets:                                 # the smallest constant: n - 1 over m + 15 when m + 16 = n twice
        _, _, combo, c = min(offsets)
        body = " * ".join(f"S_{s}" for s in combo)
        text = f"({body} {'+' if c > 0 else '-'} {abs(c)})"
        return text if isinstance(a, int) else f"float{text}"
    if isinstance(a, int):                      # a sum of sizes: the length of a cat's output
        for k in (2, 3):
            for combo in itertools.combinations_with_replacement(symbols, k):
                if a == sum(env_a[s] for s in combo) and b == sum(env_b[s] for s in combo):
                    return "(" + " + ".join(f"S_{s}" for s in combo) + ")"
    if isinstance(a, float) and a > 0 and b > 0 and not float(a).is_integer():
        try:                                    # a square root: attention's 1 / sqrt(head_dim)
            inner = size_expr(round(a * a, 12), round(b * b, 12), env_a, env_b, symbols)
        except SizeError:
            inner = None
        if inner is not None:
            return f"math.sqrt({inner})"
    raise SizeError(f"the number {a} (and {b} at another shape) is no product of the size symbols")


def _literal(value: float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value)


def probe_env(symbols: dict[str, int], env0: dict[str, int], ladders: dict[str, list[int]]) -> dict[str, int]:
    """A second shape where every symbol differs from *env0* and from every other symbol, and
    every two symbols stand in another ratio and another difference, and every sum of up to three
    sizes is another number than at *env0*, where the ladders allow (so no size is mistaken for a
    constant or for another size: with B = 2A at both shapes, 4 * C * B and
    8 * A * C would be the same number twice, and a view's size could be read as either)."""
    used: set[int] = set(env0.values())
    out: dict[str, int] = {}
    # the symbols with the fewest sizes to choose from first: a group size C / 256 has one rung (512),
    # and a batch that picked a new ratio of 2 before it made C / 256 and N / 2 the same two numbers
    for s in sorted(symbols, key=lambda s: len(ladders[s])):
        rungs = list(ladders[s])
        if len(rungs) >= 2:                 # a few more rungs of the same step, for a ratio of its own
            rungs += [rungs[-1] + k * (rungs[-1] - rungs[-2]) for k in range(1, 5)]
        options = [v for v in rungs if v != env0[s]]

        def new_ratio(v: int) -> bool:          # and another difference (n - 1 is not m + 15 twice)
            return all(v * env0[t] != w * env0[s] and v - w != env0[s] - env0[t] for t, w in out.items()) \
                and _new_sums(s, v, out, env0)
        plain = [v for v in ladders[s] if v != env0[s]]
        pick = next((v for v in options if v not in used and new_ratio(v)),
                    next((v for v in plain if v not in used), plain[0] if plain else env0[s]))
        out[s] = pick
        used.add(pick)
    return {s: out[s] for s in symbols}


def _new_sums(s: str, v: int, out: dict[str, int], env0: dict[str, int]) -> bool:
    """Every sum of up to three sizes that counts *s* (= *v*) is another number than at *env0*: a cat's
    length ``idx + 2 * x`` read as the constant 57 when 17 + 2 * 20 = 49 + 2 * 4."""
    for k in range(3):
        for combo in itertools.combinations_with_replacement(list(out), k):
            for m in range(1, 4 - k):
                if m * v + sum(out[t] for t in combo) == m * env0[s] + sum(env0[t] for t in combo):
                    return False
    return True
