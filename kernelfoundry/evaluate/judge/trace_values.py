"""The values a target-shape trace's loads read, drawn again by the judge.

A trace input is filled by :func:`inputs.trace_value_maker` (seeded by the verify seed and the
input's index): small inputs directly, large ones as one tile that every load reads through the
aperiodic hash (``child/aperiodic.py``).  The judge needs those values at a few elements to compute
the reference for the outputs a traced program wrote (:mod:`target_outputs`); it draws the tile again
and applies the same hash, so no value crosses from the candidate's process.
"""

from __future__ import annotations

import math
import numpy as np
import torch

from ...harness.inputs import TORCH_DTYPES, trace_value_maker
from ...harness.tiled import DIRECT_BYTES, tile_bytes_for
from ...task import Task
from ...harness.aperiodic_hash import hashed_values, region_salt, usable_tile


_DRAWN: dict[tuple, tuple[torch.Tensor, bool]] = {}
#: Draws kept (a tile is a few MB, a direct input at most 16 MB).
_KEEP = 8


def _drawn(task: Task, env: dict[str, int], seed: int, index: int) -> tuple[torch.Tensor, bool]:
    """Input *index*'s drawn values: all of them (direct), or its tile (tiled: True); memoised."""
    key = (task.name, repr(task.inputs[index]), tuple(sorted(env.items())), int(seed), index)
    if key not in _DRAWN:
        while len(_DRAWN) >= _KEEP:
            _DRAWN.pop(next(iter(_DRAWN)))
        _DRAWN[key] = _draw(task, env, seed, index)
    return _DRAWN[key]


def _draw(task: Task, env: dict[str, int], seed: int, index: int) -> tuple[torch.Tensor, bool]:
    spec = task.inputs[index]
    dtype = TORCH_DTYPES[spec.dtype]
    elem = torch.empty((), dtype=dtype).element_size()
    numel = math.prod(spec.concrete_shape(env))
    make = trace_value_maker(task, env, seed, index)
    if numel * elem <= DIRECT_BYTES:
        return make(numel), False
    return make(tile_bytes_for(numel * elem, elem) // elem), True


def is_tiled(task: Task, env: dict[str, int], index: int) -> bool:
    """Whether the trace maps input *index* at *env* as repeated tiles (else it is filled directly)."""
    spec = task.inputs[index]
    elem = torch.empty((), dtype=TORCH_DTYPES[spec.dtype]).element_size()
    return math.prod(spec.concrete_shape(env)) * elem > DIRECT_BYTES


def trace_input_values(task: Task, env: dict[str, int], seed: int, index: int, flat: np.ndarray) -> torch.Tensor:
    """The values of trace input *index* at flat element indices *flat* (1-D) at shape *env*, as the
    trace's loads read them under verify seed *seed*."""
    flat = np.asarray(flat, dtype=np.int64).reshape(-1)
    values, tiled = _drawn(task, env, int(seed), index)
    if not tiled:
        return values[torch.from_numpy(flat)]
    raw = values.contiguous().view(torch.uint8).numpy()
    tile = usable_tile(raw)
    if tile is None:                           # too small to hash: the tile repeats as it is
        return values[torch.from_numpy(flat % values.numel())]
    elem = values.element_size()
    data = hashed_values(tile, region_salt(seed, index), flat * elem, elem)
    return torch.from_numpy(data.view(np.uint8).copy()).view(values.dtype)
