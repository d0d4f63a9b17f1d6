"""Which shape symbols a task's reference treats independently: slicing them commutes with it.

To check a few output elements a program wrote at the target shape, the judge needs the reference
for those elements alone (the whole target reference is too large for the CPU).  A symbol is
*separable* when taking some indices along every input axis it sizes gives the reference's outputs
at those indices along the output axes it sizes: the batch and row symbols of a row-wise softmax, M
and N of a GEMM, the batch of a convolution.  A reduced symbol (a GEMM's K, a softmax's row length),
one a normalisation mixes (GroupNorm's channels) or one an integer input's range depends on is not.
Found by trying it on the task's own check shapes (a few reference calls, once per task and process);
nothing is assumed from names.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import torch

from ...harness.inputs import InputFactory
from ...task import Task
from ..contract.span_shape import shape_symbols
from .correctness import _as_list, load_reference, output_scale

#: Indices taken along a symbol in the trial (fewer when the symbol is smaller).
TRIAL_INDICES = 3
#: Output-axis assignments tried per symbol, at most.
MAX_ASSIGNMENTS = 16

_CACHE: dict[tuple, dict[str, tuple[tuple[int, ...], ...]]] = {}


def _close(got: torch.Tensor, want: torch.Tensor, task: Task) -> bool:
    if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
        return False
    g, w = got.detach().to(torch.float64).numpy(), want.detach().to(torch.float64).numpy()
    return bool(((abs(g - w) <= task.atol * output_scale(w) + task.rtol * abs(w)) | ((g != g) & (w != w))).all())


def separable_symbols(task: Task) -> dict[str, tuple[tuple[int, ...], ...]]:
    """Separable symbol -> per output, the output axes it indexes (every output has one at least: an output
    that looks the same whatever is sliced may only be insensitive at the check shapes' values)."""
    key = (task.name, task.reference, repr(task.inputs), repr(task.check_shapes))
    if key not in _CACHE:
        _CACHE[key] = _find(task)
    return _CACHE[key]


def _find(task: Task) -> dict[str, tuple[tuple[int, ...], ...]]:
    reference = load_reference(task)
    envs = list(task.check_shapes)
    factory = InputFactory(task, 0)
    try:
        drawn = [factory.make(env, "normal", call=100 + k) for k, env in enumerate(envs)]
        outs = [_as_list(reference(*[t.clone() for t in inputs])) for inputs in drawn]
    except Exception:      # noqa: BLE001 - a reference that fails here is judged by the checks
        return {}
    found: dict[str, tuple[tuple[int, ...], ...]] = {}
    rng = random.Random(f"separable:{task.name}")
    for symbol in shape_symbols(task):
        e = max(range(len(envs)), key=lambda k: envs[k].get(symbol, 0))
        size = envs[e].get(symbol, 0)
        if size < 2:
            continue
        index = torch.tensor(sorted(rng.sample(range(size), min(TRIAL_INDICES, size - 1))))
        candidates = [[a for a in range(outs[e][o].dim())
                       if all(outs[k][o].dim() == outs[e][o].dim() and outs[k][o].shape[a] == env[symbol]
                              for k, env in enumerate(envs))] for o in range(len(outs[e]))]
        if not all(candidates):         # an output it sizes no axis of (a loss over the batch): not separable
            continue
        options = [[tuple(c)] + ([(a,) for a in c] if len(c) > 1 else []) for c in candidates]
        sliced = [_take(t, spec.shape, symbol, index) for t, spec in zip(drawn[e], task.inputs)]
        try:
            got = _as_list(reference(*sliced))
        except Exception:  # noqa: BLE001 - slicing broke the reference (an index range, a shape): not separable
            continue
        if len(got) != len(outs[e]):
            continue
        for assignment in itertools.islice(itertools.product(*options), MAX_ASSIGNMENTS):
            if all(_close(g, _take_axes(full, axes, index), task) for g, full, axes in zip(got, outs[e], assignment)):
                found[symbol] = tuple(assignment)
                break
    return found


def _take(t: Any, shape: tuple, symbol: str, index: torch.Tensor) -> Any:
    """*t* (an input of symbolic *shape*) at *index* along every axis *symbol* sizes."""
    if not isinstance(t, torch.Tensor):
        return t
    out = t.clone()
    for axis, d in enumerate(shape):
        if d == symbol:
            out = out.index_select(axis, index)
    return out


def _take_axes(t: torch.Tensor, axes: tuple[int, ...], index: torch.Tensor) -> torch.Tensor:
    for axis in axes:
        t = t.index_select(axis, index)
    return t
