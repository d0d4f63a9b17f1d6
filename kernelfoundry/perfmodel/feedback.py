"""A few lines per (hardware, shape) telling the LLM where a kernel stands and what limits it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .baseline import ReferenceProfile
from .hardware import HardwareSpec
from .model import ModelOutput

_LIMITER = ("the per-core program limit", "shared memory", "threads", "registers")


def fmt_bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_seconds(t: float) -> str:
    if t >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    return f"{t * 1e6:.3g} us"


def fmt_config(cfg: dict[str, Any] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in (cfg or {}).items()) or "(no parameters)"


def _limits(spec: HardwareSpec, entry: dict, d: dict[str, float], profile: ReferenceProfile) -> list[str]:
    out = []
    bound = entry["bound"]
    compulsory = profile.input_bytes + profile.output_bytes
    dram = d["dram_read"] + d["dram_write"]
    if compulsory > 0 and dram > 1.3 * compulsory:
        why = ("programs re-read their own data (several passes) and it falls out of L1/L2"
               if d["reread_dram"] > 0.3 * dram else
               "programs running together share little data through L2 (tile order / grouping)")
        out.append(f"DRAM traffic {fmt_bytes(dram)} is {dram / compulsory:.1f}x the compulsory "
                   f"{fmt_bytes(compulsory)}: {why}")
    if d["coalescing"] < 0.7:
        out.append(f"only {d['coalescing']:.0%} of each 32-byte sector moved is used: strided or "
                   f"misaligned accesses; make the fastest-varying index contiguous in memory")
    if d["spill_bytes_per_trip"] > 0:
        out.append("registers spill: the largest block is too big for the program's threads; "
                   "use more warps or smaller blocks")
    cores = spec.cores if d["has_dot"] else (spec.vector_cores or spec.cores)
    if d["programs"] < cores:
        out.append(f"the grid has {d['programs']:.0f} programs for {cores} cores: most cores idle; "
                   f"split the work into more programs")
    elif bound in ("latency", "compute-matrix", "compute-vector", "shared-memory"):
        slots = d["cores_used"] * d["resident"]
        waves = d["programs"] / slots
        tail = waves - math.floor(waves)
        if 0 < tail < 0.5 and waves < 4:
            out.append(f"{d['programs']:.0f} programs fill {waves:.2f} waves of {slots:.0f}: "
                       f"the last wave is {tail:.0%} full")
    if bound == "latency":
        lim = _LIMITER[int(d["limiter"])] if not spec.is_npu else "one program per core"
        out.append(f"latency-bound: too few bytes in flight ({d['resident']:.0f} program(s) per core, "
                   f"limited by {lim}; {d['stages_effective']:.0f} stage(s)); raise num_stages, the block "
                   f"size or programs per core")
    elif bound == "shared-memory":
        out.append("operand feed from shared memory limits the matrix units: use larger dot tiles")
    elif bound == "launch":
        out.append(f"launch overhead dominates ({d['launches']:.0f} launch(es) x "
                   f"{spec.launch_overhead_us:g} us): fuse kernels or give each launch more work")
    elif bound == "compute-vector":
        out.append("vector units are the bound: fewer element ops per output (hoist, reuse, cheaper math)")
    elif bound == "l2" and not out:
        out.append("L2 bandwidth is the bound: reuse tiles longer on chip (larger tiles)")
    return out[:3]


def shape_feedback(spec: HardwareSpec, entry: dict, out: ModelOutput, h: int, c: int,
                   profile: ReferenceProfile, configs: list[dict], multi_shape: bool) -> str:
    """The feedback line(s) for one hardware at one shape (best config *c*)."""
    where = spec.name + (f" {entry['shape']}" if multi_shape else "")
    if entry["latency_s"] is None:
        line = f"{where}: no valid config: {entry.get('invalid_reason', 'invalid')}"
        if "smem_bytes" in out.details and np.isfinite(out.details["smem_bytes"][h]).any():
            need = float(np.nanmin(out.details["smem_bytes"][h]))
            if need > spec.smem_bytes_per_program > 0:
                line += (f" (smallest config needs {fmt_bytes(need)} of shared memory per program, "
                         f"limit {fmt_bytes(spec.smem_bytes_per_program)}): use smaller tiles or fewer stages")
        return line + "."
    d = {k: float(v[h, c]) for k, v in out.details.items()}
    lat, sol, eager = entry["latency_s"], entry["sol_s"], entry["baseline_s"]
    head = (f"{where}: {entry['bound']}-bound at {sol / lat:.0%} of speed-of-light, {eager / lat:.2f}x vs "
            f"eager PyTorch ({fmt_seconds(lat)} vs {fmt_seconds(eager)}); best {fmt_config(configs[c])}")
    limits = _limits(spec, entry, d, profile)
    return head + (". " + "; ".join(limits) + "." if limits else ".")
