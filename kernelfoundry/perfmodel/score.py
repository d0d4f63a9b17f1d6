"""Score a verified candidate: tune its PARAMS in the model and compare with the eager baseline.

``score_candidate`` evaluates every (kernel config x hint combination) of the candidate on
every target hardware at every traced target shape, picks the best config per
(hardware, shape) and the single config best across shapes per hardware, and returns
the objective, per-hardware :class:`HardwareScore` records and feedback for the LLM.

Objective = geometric mean over (target shape x hardware) of eager-baseline latency /
best predicted latency.  It is ``None`` when nothing could be scored (no traces), and
``0.0`` when some hardware has no valid config at some traced shape (the kernel cannot
run there; the feedback names the reason).  Shapes without traces are left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..candidate import config_key
from ..records import ConfigTrace, HardwareScore
from ..task import Task
from .alignment import unaligned_bytes
from .baseline import baseline, profile_reference
from .feedback import shape_feedback
from .hardware import resolve_hardware
from .model import BOUNDS, HardwareArrays
from .tuning import REASON_TEXT, plan_configs, sweep


@dataclass
class ScoreResult:
    """The model's verdict on one candidate."""

    objective: float | None
    hardware: dict[str, HardwareScore]
    best_configs: list[dict[str, Any]]
    feedback: str
    table: list[dict[str, Any]] = field(default_factory=list)   # best config per (hardware, shape)
    configs_evaluated: int = 0
    sampled: bool = False
    ranked: dict[str, list[dict[str, Any]]] = field(default_factory=dict)   # per hardware, best first (top 16)

    def to_dict(self) -> dict[str, Any]:
        return {"objective": self.objective, "hardware": {k: v.to_dict() for k, v in self.hardware.items()},
                "best_configs": self.best_configs, "feedback": self.feedback, "table": self.table,
                "configs_evaluated": self.configs_evaluated, "sampled": self.sampled}


def _geomean(values: list[float]) -> float:
    if not values:
        return float("nan")
    if any(v <= 0 for v in values):
        return 0.0
    if any(math.isinf(v) for v in values):
        return math.inf
    return math.exp(sum(math.log(v) for v in values) / len(values))


RANKED = 16


def score_candidate(task: Task, traces: list[ConfigTrace], param_space: dict, hardware: list[str], *,
                    seed: int = 0, max_configs: int = 4096,
                    exclude: dict[str, set[str]] | None = None,
                    compiled: dict[str, dict[str, list[dict]]] | None = None) -> ScoreResult:
    """Tune and score a candidate from its traces; see the module docstring.

    *exclude* maps a hardware name to config keys (``config_key``) that cannot run there (they
    did not compile for it): they are never picked for that hardware.  *compiled* maps a hardware
    name and a config key to the compiler's resources of each launch (the compile gate's): they
    replace the model's register, shared-memory and spill estimates for that config.
    """
    specs = resolve_hardware(list(hardware))
    names = [s.name for s in specs]
    if not traces:
        return ScoreResult(objective=None, hardware={}, best_configs=[],
                           feedback="not scored: the trace produced no launches to model.")
    hw = HardwareArrays(specs)
    plan = plan_configs([t.config for t in traces], param_space, cap=max_configs, seed=seed)
    shape_ids = sorted({t.shape_index for t in traces})
    shapes = {i: (task.target_shapes[i] if i < len(task.target_shapes)
                  else next(t.shape for t in traces if t.shape_index == i)) for i in shape_ids}
    sweeps = {i: sweep(plan, [t for t in traces if t.shape_index == i], hw, unaligned_bytes(task, shapes[i]),
                       compiled=compiled)
              for i in shape_ids}

    scores: dict[str, HardwareScore] = {}
    table, lines, speedups, best_all = [], [], [], []
    ranked: dict[str, list[dict[str, Any]]] = {}
    keys = [config_key(c) for c in plan.configs]
    for h, spec in enumerate(specs):
        banned = (exclude or {}).get(spec.name)
        if banned:
            mask = np.array([k in banned for k in keys])
            for i in shape_ids:
                sweeps[i].latency[h, mask] = np.inf
        lat = np.stack([sweeps[i].latency[h] for i in shape_ids])          # [S, C]
        with np.errstate(divide="ignore"):
            across = np.exp(np.mean(np.log(lat), axis=0))
        best_c = int(np.argmin(across)) if np.isfinite(across).any() else None
        order = [int(c) for c in np.argsort(across, kind="stable")[:RANKED] if np.isfinite(across[c])]
        ranked[spec.name] = [dict(plan.configs[c]) for c in order]
        per_shape, hw_lines = [], []
        for s_pos, i in enumerate(shape_ids):
            out = sweeps[i]
            eager, sol = baseline(task, shapes[i], spec)
            c = int(np.argmin(out.latency[h]))
            best = float(out.latency[h, c])
            valid = math.isfinite(best)
            entry = {"shape": dict(shapes[i]), "latency_s": best if valid else None, "sol_s": sol,
                     "baseline_s": eager, "best_params": dict(plan.configs[c]) if valid else None,
                     "bound": BOUNDS[int(out.bound[h, c])] if valid else None,
                     "breakdown": ({k: float(v[h, c]) for k, v in out.components.items()} if valid else {})}
            if not valid:
                codes = out.reason[h]
                entry["invalid_reason"] = REASON_TEXT[int(np.bincount(codes.astype(np.int64)).argmax())]
            per_shape.append(entry)
            table.append({"hardware": spec.name, "shape_index": i, **entry})
            speedups.append(eager / best if valid else 0.0)
            if valid:
                best_all.append(plan.configs[c])
            hw_lines.append(shape_feedback(spec, entry, out, h, c, profile_reference(task, shapes[i]),
                                           plan.configs, len(shape_ids) > 1))
        lat_best = [e["latency_s"] for e in per_shape]
        ok = all(v is not None for v in lat_best)
        scores[spec.name] = HardwareScore(
            latency_s=_geomean(lat_best) if ok else math.inf,
            sol_fraction=_geomean([e["sol_s"] / e["latency_s"] for e in per_shape]) if ok else 0.0,
            baseline_s=_geomean([e["baseline_s"] for e in per_shape]),
            best_params=dict(plan.configs[best_c]) if best_c is not None else {},
            per_shape=per_shape)
        if best_c is not None:
            best_all.append(plan.configs[best_c])
        lines.extend(hw_lines)

    distinct: dict[str, dict] = {}
    for cfg in best_all:
        distinct.setdefault(config_key(cfg), dict(cfg))
    objective = _geomean(speedups)
    summary = (f"objective {objective:.3g}x over eager PyTorch (geomean over {len(shape_ids)} shape(s) x "
               f"{len(names)} hardware); {len(plan)} configs evaluated"
               + (" (seeded sample)" if plan.sampled else "") + ".")
    return ScoreResult(objective=objective, hardware=scores, best_configs=list(distinct.values()),
                       feedback="\n".join([summary] + lines), table=table, configs_evaluated=len(plan),
                       sampled=plan.sampled, ranked=ranked)
