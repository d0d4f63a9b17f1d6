"""Provisional traces of one job share the wave pass of launches that are the same launch.

A level-2 chain's configs are the product of its kernels' tile choices, so most of its
launches recur unchanged from config to config (the epilogue's reductions under every
tile of the GEMM), and the wave pass (the first programs in launch order, run for their
footprint anchors) is most of a provisional trace's time.  Within one trace job, a
provisional trace takes the wave of an earlier config's launch when the launch is the
same: the same kernel object, grid, constexprs, scalar arguments, tensor arguments
(dtype, shape, strides, offset, storage size, and which of them alias), and the same load
sites to anchor.  Anchors are offsets from each tensor's start, so they do not depend on
where a config's buffers were allocated.

Only provisional traces reuse (docs/verifier.md, "Lazy dense traces"): they only steer
which configs are traced again densely, and every config the model finally picks is
traced densely, wave included, in a job of its own.  A kernel whose anchors depend on
data an earlier launch wrote can at worst misplace the model's first picks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

_SCALARS = (bool, int, float, str, type(None))


def _argument(value: Any, storages: list[int]) -> Any:
    """A hashable description of one kernel argument, or raise TypeError for one not described."""
    if isinstance(value, tuple):
        return ("tuple", tuple(_argument(v, storages) for v in value))
    if isinstance(value, torch.Tensor):
        storage = value.untyped_storage().data_ptr()
        if storage not in storages:
            storages.append(storage)
        return ("tensor", str(value.dtype), tuple(value.shape), tuple(value.stride()), value.storage_offset(),
                value.untyped_storage().nbytes(), storages.index(storage))
    if isinstance(value, torch.dtype):
        return ("dtype", str(value))
    if isinstance(value, _SCALARS):
        return (type(value).__name__, repr(value))
    raw = getattr(value, "value", value)        # a tl.constexpr or a tl.dtype
    if raw is not value:
        return ("constexpr", _argument(raw, storages))
    if type(value).__module__.startswith("triton.language"):
        return ("tl", repr(value))
    raise TypeError(type(value).__name__)


def launch_key(fn: Any, grid: tuple[int, ...], call_args: dict[str, Any], targets: set) -> tuple | None:
    """What makes two launches the same for the wave pass; None when an argument is of a kind not
    described here (a tensor descriptor, a host object): such a launch is never reused."""
    storages: list[int] = []
    try:
        args = tuple((name, _argument(value, storages)) for name, value in call_args.items())
    except TypeError:
        return None
    return (fn, tuple(grid), args, tuple(sorted(targets)))


class WaveReuse:
    """Wave rows by launch key, for the provisional traces of one job; counts what it saved."""

    def __init__(self) -> None:
        self._waves: dict[tuple, tuple[int, np.ndarray]] = {}
        self.reused = 0
        self.traced = 0

    def get(self, key: tuple | None) -> tuple[int, np.ndarray] | None:
        """(programs, anchor rows) of the wave recorded under *key*, else None."""
        found = self._waves.get(key) if key is not None else None
        self.reused += found is not None
        return found

    def put(self, key: tuple | None, programs: int, rows: np.ndarray) -> None:
        self.traced += 1
        if key is not None:
            self._waves[key] = (programs, rows.copy())
