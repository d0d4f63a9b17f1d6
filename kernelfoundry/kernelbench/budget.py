"""Check shapes within the interpreter's work budget.

The check runs the starting kernel under Triton's interpreter on CPU, where a convolution's
implicit GEMM does a few million multiply-adds a second and a launch has 30 s.  Check shapes
kept under an element cap can still mean billions of multiply-adds: a 3D transposed
convolution reads ``C_in x k^3`` products per output element.  :func:`work` estimates the
reference's cost at a shape on the meta device (multiply-adds of its convolutions, as the
gather kernel computes them; an eighth of a unit per matmul multiply-add, whose tiles are large;
plus one unit per element every op writes; plus :data:`ROW_UNITS` per row of every reduction, scan
and row-wise normalization, since a naive kernel runs a program per row and the interpreter pays
milliseconds per program whatever its size);
:func:`fit` lowers the free size symbols of a check shape over :data:`BUDGET` until it fits,
keeping each symbol's parity and its divisibility by the constructor's small ints (the residue
mod 16 yields: it cannot go below 16 for a multiple of 16), and only to sizes at which the
reference still runs (a convolution's input no smaller than its kernel).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

BUDGET = (6e6, 24e6)          # estimated work units (multiply-adds) at each check shape
#: Work units per row of a reduction: a program of a dozen block ops costs the interpreter about 2 ms
#: (measured: a one-program-per-row sum of squares, 4,096 programs of 16-element rows, 8.7 s of CPU),
#: about 6,000 units at the few million multiply-adds a second a convolution's gather kernel runs at.
ROW_UNITS = 6000
aten = torch.ops.aten
#: Ops that reduce over dims: one row per output element.
_REDUCTIONS = {aten.sum, aten.mean, aten.amax, aten.amin, aten.max, aten.min, aten.argmax, aten.argmin,
               aten.var, aten.std, aten.var_mean, aten.std_mean, aten.prod, aten.logsumexp,
               aten.linalg_vector_norm, aten.norm, aten.all, aten.any}
#: Ops that keep the shape and work along one dim (args[1]): one row per element not on that dim.
_ALONG_DIM = {aten._softmax, aten._log_softmax, aten.cumsum, aten.cumprod, aten.cummax, aten.cummin,
              aten.logcumsumexp}


def _rows(packet: Any, args: tuple, n_out: int) -> int:
    """How many rows a naive kernel for this op runs a program for (0: not a row-wise op)."""
    first = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if first is None or first.dim() == 0:
        return 0
    if packet in _REDUCTIONS:
        return n_out
    if packet in _ALONG_DIM and len(args) > 1 and isinstance(args[1], int):
        return first.numel() // max(1, first.shape[args[1]])
    if packet is aten.native_layer_norm:                    # normalized over the trailing dims
        return first.numel() // max(1, math.prod(args[1]))
    if packet is aten.native_group_norm:                    # (input, weight, bias, N, C, HxW, group, eps)
        return args[3] * args[6]
    if packet is aten.native_batch_norm or packet is aten._native_batch_norm_legit_no_training:
        return first.shape[1] if first.dim() > 1 else 1
    return 0


class _Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.units = 0.0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        packet = getattr(func, "overloadpacket", None)
        first = out[0] if isinstance(out, (tuple, list)) and out else out
        n = first.numel() if isinstance(first, torch.Tensor) else 0
        if packet is aten.convolution:
            w, transposed, groups = args[1], args[6], args[8]
            per = (w.shape[0] // groups if transposed else w.shape[1]) * math.prod(w.shape[2:])
            self.units += n * per
        elif packet in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm):
            a = args[-2] if packet in (aten.addmm, aten.baddbmm) else args[0]
            self.units += n * a.shape[-1] / 8      # tl.dot on large tiles: cheap per multiply-add
        else:
            self.units += n
        self.units += ROW_UNITS * _rows(packet, args, n)
        return out


def work(reference: Callable, inputs: list[dict[str, Any]], env: dict[str, int]) -> float | None:
    """The estimated work of *reference* at *env* (None where it fails there)."""
    try:
        args = [torch.empty([env[d] if isinstance(d, str) else d for d in s["shape"]],
                            dtype=getattr(torch, s["dtype"]), device="meta") for s in inputs]
        counter = _Count()
        with counter, torch.no_grad():
            reference(*args)
        return counter.units
    except Exception:  # noqa: BLE001 - the reference cannot run at this shape
        return None


def lower_sizes(value: int, divisors: list[int], at_least: int) -> list[int]:
    """Sizes below the check ladder for *value*: its parity and the small divisors it has, ascending;
    like the ladder, at least two per group where *value* has two (a group of one has no spread)."""
    groups = 1
    for d in divisors:
        if 1 < d <= 256 and value % d == 0:
            groups = math.lcm(groups, d)
    need = math.lcm(groups, 2 if value % 2 == 0 else 1)
    start = max(2, at_least, 2 * groups if groups > 1 and value // groups >= 2 else 0)
    return [s for s in range(start, 16 * 40) if s % need == 0 and (value % 2 == 1) == (s % 2 == 1)]


def fit(env: dict[str, int], symbols: dict[str, int], divisors: list[int], at_least: int, budget: float,
        cost: Callable[[dict[str, int]], float | None]) -> dict[str, int]:
    """*env* with its largest symbols halved (toward :func:`lower_sizes`) while *cost* exceeds *budget*;
    where that is not enough, the constructor's ints stop dividing the sizes, largest first (a group
    count the Model needs still holds: every step must run on the meta device)."""
    units = cost(env)
    if units is None or units <= budget:
        return env
    cuts = sorted({d for d in divisors if d > 1}, reverse=True)
    for tier in [divisors] + [[d for d in divisors if d < cut] for cut in cuts]:
        env, units = _descend(env, units, symbols, tier, at_least, budget, cost)
        if units <= budget:
            break
    return env


def _descend(env, units, symbols, divisors, at_least, budget, cost):
    stuck: set[str] = set()
    while units > budget:
        options = {s: [v for v in lower_sizes(symbols[s], divisors, at_least) if v < env[s]]
                   for s in env if s not in stuck}
        options = {s: o for s, o in options.items() if o}
        if not options:
            break
        who = max(options, key=lambda s: env[s])
        taken = {v for s, v in env.items() if s != who}       # distinct sizes catch a size read from the wrong dim
        pick = min(options[who], key=lambda v: (v in taken, abs(v - env[who] / 2)))
        trial = dict(env, **{who: pick})
        got = cost(trial)
        if got is None or got >= units:
            stuck.add(who)
            continue
        env, units = trial, got
    return env, units


def widen(env: dict[str, int], symbols: dict[str, int], divisors: list[int], at_least: int, budget: float,
          cost: Callable[[dict[str, int]], float | None]) -> dict[str, int]:
    """A second check shape above *env* (when fitting both to the budget made them one): each symbol,
    smallest first, raised to a size it may take (parity, divisors), near 1.5x where *budget* allows;
    *env* itself where nothing fits.  Two shapes catch what one cannot (a size read from the wrong dim)."""
    out = dict(env)
    for s in sorted(env, key=lambda s: (env[s], s)):
        ups = [v for v in lower_sizes(symbols[s], divisors, at_least) if v > out[s]][:12]
        taken = {v for t, v in out.items() if t != s}
        for v in sorted(ups, key=lambda v: (v in taken, abs(v - 1.5 * out[s]), v)):
            trial = dict(out, **{s: v})
            got = cost(trial)
            if got is not None and got <= budget:
                out = trial
                break
    return out
