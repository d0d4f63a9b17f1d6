"""Model-guided autotuning: the model ranks every config of a candidate, the device times the best k.

The model sweeps thousands of (kernel config x num_warps x num_stages) points per target shape
in milliseconds; :func:`top_configs` keeps the k fastest valid ones per shape with what the
fake timer and calibration need (prediction, bound, launch part).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..records import ConfigTrace
from ..perfmodel import BOUNDS, HardwareArrays, load_hardware, plan_configs, sweep, unaligned_bytes
from ..task import Task


def top_configs(task: Task, traces: list[ConfigTrace], param_space: dict[str, list[Any]], hardware: str, k: int,
                *, seed: int = 0, max_configs: int = 4096) -> dict[int, list[dict[str, Any]]]:
    """Per traced target shape index, the model's *k* fastest valid configs on *hardware*, fastest first:
    ``{"config": {...full params...}, "predicted_s", "bound", "launch_s", "launches", "breakdown"}``."""
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k}")
    if not traces:
        return {}
    hw = HardwareArrays([load_hardware(hardware)])
    plan = plan_configs([t.config for t in traces], param_space, cap=max_configs, seed=seed)
    out: dict[int, list[dict[str, Any]]] = {}
    for index in sorted({t.shape_index for t in traces}):
        mine = [t for t in traces if t.shape_index == index]
        shape = mine[0].shape
        res = sweep(plan, mine, hw, unaligned_bytes(task, shape))
        lat = res.latency[0]
        order = [int(c) for c in np.argsort(lat, kind="stable") if math.isfinite(float(lat[c]))][:k]
        launches = {_key(t.config): len(t.launches) for t in mine}
        out[index] = [{"config": dict(plan.configs[c]), "predicted_s": float(lat[c]),
                       "bound": BOUNDS[int(res.bound[0, c])],
                       "launch_s": float(res.components.get("launch", np.zeros_like(res.latency))[0, c]),
                       "launches": launches.get(_key(plan.kernel_configs[int(plan.kernel_index[c])]), 1),
                       "breakdown": {n: float(v[0, c]) for n, v in res.components.items()}}
                      for c in order]
    return out


def _key(config: dict[str, Any]) -> str:
    from ..candidate import config_key
    return config_key(config)
