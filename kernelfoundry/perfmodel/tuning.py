"""Template-parameter tuning plan: traced kernel configs x hint combinations, capped.

Kernel configs (the non-hint PARAMS: block sizes, GROUP_M, ...) are the ones the tracer
ran; the hints ``num_warps`` / ``num_stages`` change nothing the interpreter computes, so
the model sweeps every combination of them listed in PARAMS on the same trace.  Beyond
``cap`` full configs a seeded sample stands in (the default config always included).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..candidate import HINT_PARAMS, config_key
from ..records import ConfigTrace
from .features import launch_features
from .model import BOUNDS, HardwareArrays, ModelOutput, evaluate, sum_launches
from .occupancy import REASONS, CompiledArrays

#: Triton's launch defaults, used when PARAMS does not list a hint.
HINT_DEFAULTS = {"num_warps": 4, "num_stages": 3}


@dataclass
class TuningPlan:
    """The full configs to evaluate: kernel config index and hint values per entry."""

    kernel_configs: list[dict]      # distinct traced kernel configs, in trace order
    configs: list[dict]             # full configs (kernel params + the hints PARAMS lists)
    kernel_index: np.ndarray        # [C] -> kernel_configs
    warps: np.ndarray               # [C]
    stages: np.ndarray              # [C]
    sampled: bool                   # True when the grid exceeded the cap

    def __len__(self) -> int:
        return len(self.configs)


def hint_grid(param_space: dict[str, list]) -> list[dict]:
    """Every combination of the hints listed in *param_space* (``[{}]`` when none is)."""
    names = [n for n in HINT_PARAMS if n in param_space]
    return [dict(zip(names, combo)) for combo in itertools.product(*(param_space[n] for n in names))]


def plan_configs(kernel_configs: list[dict], param_space: dict[str, list], *, cap: int = 4096,
                 seed: int = 0) -> TuningPlan:
    """All (kernel config x hint combination) pairs up to *cap*, else a seeded sample of them."""
    seen: dict[str, dict] = {}
    for cfg in kernel_configs:
        seen.setdefault(config_key(cfg), dict(cfg))
    kernels = list(seen.values())
    hints = hint_grid(param_space)
    total = len(kernels) * len(hints)
    if total == 0:
        raise ValueError("no kernel configs to tune")
    if total <= cap:
        chosen = np.arange(total)
    else:
        rng = np.random.default_rng(seed)
        rest = rng.choice(np.arange(1, total), size=max(cap - 1, 0), replace=False)
        chosen = np.concatenate([[0], np.sort(rest)])
    k_idx, h_idx = chosen // len(hints), chosen % len(hints)
    configs = [{**kernels[k], **hints[h]} for k, h in zip(k_idx, h_idx)]
    warps = np.array([hints[h].get("num_warps", HINT_DEFAULTS["num_warps"]) for h in h_idx], dtype=float)
    stages = np.array([hints[h].get("num_stages", HINT_DEFAULTS["num_stages"]) for h in h_idx], dtype=float)
    return TuningPlan(kernel_configs=kernels, configs=configs, kernel_index=k_idx, warps=warps,
                      stages=stages, sampled=total > cap)


#: Reason code of a config whose kernel config has no trace at a shape.
NOT_TRACED = len(REASONS)
REASON_TEXT = REASONS + ("not traced at this shape",)


def compiled_arrays(compiled: dict[str, dict[str, list[dict]]] | None, hw: HardwareArrays,
                    point_configs: list[str], point_launch: np.ndarray) -> CompiledArrays | None:
    """The compiler's figures per [hardware, point] (NaN where unknown), from *compiled*:
    hardware name -> config key -> per-launch ``CompiledResources`` dicts, in launch order."""
    if not compiled:
        return None
    shape = (len(hw.names), len(point_configs))
    regs, smem, spill = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
    for h, name in enumerate(hw.names):
        per_config = compiled.get(name) or {}
        for p, (key, j) in enumerate(zip(point_configs, point_launch)):
            launches = per_config.get(key)
            if launches and j < len(launches) and launches[j]:
                r = launches[j]
                regs[h, p] = float(r.get("registers", np.nan))
                smem[h, p] = float(r.get("shared_bytes", np.nan))
                spill[h, p] = float(r.get("spill_store_bytes", 0) + r.get("spill_load_bytes", 0))
    return CompiledArrays(registers=regs, shared_bytes=smem, spill_bytes=spill)


def add_zero_fills(out: ModelOutput, traces: list[ConfigTrace], hw: HardwareArrays) -> ModelOutput:
    """*out* ([H, C], config c traced by ``traces[c]``) with the fill kernel of each zero-filled
    allocation the host code made (``torch.zeros*``): one launch writing its bytes at the copy
    bandwidth.  A kernel that stores only part of a zeroed output pays for the whole of it."""
    count = np.array([len(t.zero_fill_bytes) for t in traces], dtype=float)
    if not count.any():
        return out
    written = np.array([sum(t.zero_fill_bytes) for t in traces], dtype=float)
    dram = written[None, :] / hw.dram_bw
    launch = count[None, :] * hw.launch
    components = dict(out.components)
    components["dram"] = components["dram"] + dram
    components["launch"] = components["launch"] + launch
    details = dict(out.details)
    details["dram_write"] = details["dram_write"] + written[None, :]
    details["launches"] = details["launches"] + count[None, :]
    bound = np.stack([components[b] for b in BOUNDS]).argmax(axis=0)
    return ModelOutput(latency=out.latency + dram + launch, reason=out.reason, bound=bound,
                       components=components, details=details)


def sweep(plan: TuningPlan, traces: list[ConfigTrace], hw: HardwareArrays,
          unaligned: frozenset[int] = frozenset(), compiled: dict[str, dict[str, list[dict]]] | None = None
          ) -> ModelOutput:
    """Evaluate every config of *plan* at one shape (its *traces*) on every hardware: [H, C].

    *unaligned*: storage sizes of tensors Triton cannot vectorise (:mod:`.alignment`).
    *compiled*: the compile gate's resources per hardware and config key (see :func:`compiled_arrays`)."""
    by_key = {config_key(t.config): t for t in traces}
    launches, rows_of = [], {}
    for key, trace in by_key.items():
        rows_of[key] = list(range(len(launches), len(launches) + len(trace.launches)))
        launches.extend(trace.launches)
    C = len(plan)
    keys = [config_key(k) for k in plan.kernel_configs]
    live = np.array([c for c in range(C) if rows_of.get(keys[plan.kernel_index[c]])], dtype=np.int64)
    H = len(hw.names)
    full_latency = np.full((H, C), np.inf)
    full_reason = np.full((H, C), NOT_TRACED, dtype=np.int8)
    full_bound = np.zeros((H, C), dtype=np.int64)
    if len(live) == 0:
        return ModelOutput(latency=full_latency, reason=full_reason, bound=full_bound, components={}, details={})
    feat = launch_features(launches, unaligned)
    counts = np.array([len(rows_of[keys[plan.kernel_index[c]]]) for c in live])
    rows = np.concatenate([rows_of[keys[plan.kernel_index[c]]] for c in live])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    arrays = None
    if compiled:
        point_configs = [config_key(plan.configs[c]) for c, n in zip(live, counts) for _ in range(n)]
        point_launch = np.concatenate([np.arange(n) for n in counts])
        arrays = compiled_arrays(compiled, hw, point_configs, point_launch)
    out = evaluate(feat, rows, np.repeat(plan.warps[live], counts), np.repeat(plan.stages[live], counts), hw,
                   pad=feat.padded_flop_factor(hw.granules), compiled=arrays)
    out = add_zero_fills(sum_launches(out, starts), [by_key[keys[plan.kernel_index[c]]] for c in live], hw)

    def scatter(a, fill):
        full = np.full((H, C), fill, dtype=a.dtype)
        full[:, live] = a
        return full

    return ModelOutput(latency=scatter(out.latency, np.inf), reason=scatter(out.reason, NOT_TRACED),
                       bound=scatter(out.bound, 0),
                       components={k: scatter(v, np.nan) for k, v in out.components.items()},
                       details={k: scatter(v, np.nan) for k, v in out.details.items()})
