"""The compile gate: the model's best configs compiled for each GPU of the run, ahead of time, on the CPU.

After the model has ranked the configs per hardware, each hardware's own top ``k``
(default 4) and the default config are compiled for it, for every hardware with a
Triton backend in the installed wheel (:mod:`kernelfoundry.compiler`: a sandboxed job imports the candidate with the
interpreter off; ptxas and cuobjdump run in the driver), from the launch signatures
the trace recorded at the first target shape (Triton's own binder: divisibility by
16, constexprs, launch options).  A config that does not compile for a hardware is
invalid there and the model picks again without it (a second round compiles the new
best when it was not among the first); a hardware where nothing compiles gets no
valid config; when nothing compiles anywhere the candidate fails here, with the
compiler's message.  Hardware without a backend (NPUs, Intel GPUs here) keeps the
model's estimates and says so.  Artefacts are cached (see docs/compiler.md).
"""

from __future__ import annotations

import time
from typing import Any

from ...candidate import HINT_PARAMS, config_key
from ...records import ConfigTrace, GateResult

DEFAULT_TOP_K = 4
ROUNDS = 2


def launch_signatures(traces: list[ConfigTrace]) -> dict[str, list[dict[str, Any]] | None]:
    """Kernel-config key -> the signatures of its launches at the first traced shape (None when some
    launch has no signature the compiler can take, e.g. a tensor descriptor)."""
    out: dict[str, list[dict[str, Any]] | None] = {}
    first = min((t.shape_index for t in traces), default=0)
    for trace in traces:
        if trace.shape_index != first:
            continue
        sigs = [launch.signature for launch in trace.launches]
        usable = all(isinstance(s, dict) and "args" in s for s in sigs)
        out[config_key(trace.config)] = [dict(s) for s in sigs] if usable and sigs else None
    return out


def _with_hints(signatures: list[dict[str, Any]], config: dict[str, Any]) -> list[dict[str, Any]]:
    """The launch signatures with the config's launch hints (num_warps, num_stages) in place."""
    hints = {k: config[k] for k in HINT_PARAMS if k in config}
    return [{**s, **hints} for s in signatures]


def _kernel_part(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in HINT_PARAMS}


def _wanted(ranked: dict[str, list[dict[str, Any]]], default: dict[str, Any], top_k: int,
            hardware: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Per hardware: its own top *top_k* configs and the default."""
    out = {}
    for name in hardware:
        configs = {config_key(c): c for c in (ranked.get(name) or [])[:top_k]}
        configs.setdefault(config_key(default), default)
        out[name] = list(configs.values())
    return out


def compile_configs(source: str, wanted: dict[str, list[dict[str, Any]]], sigs_by_kernel: dict[str, Any],
                    cache: Any, already: set[tuple[str, str]]) -> Any:
    """Compile each hardware's *wanted* configs (full configs) not compiled for it yet, in one job;
    returns the compiler's report (None when there is nothing to do)."""
    from ...compiler import compile_candidate
    todo, per_hardware = {}, {}
    for name, configs in wanted.items():
        for config in configs:
            key = config_key(config)
            sigs = sigs_by_kernel.get(config_key(_kernel_part(config)))
            if (name, key) not in already and sigs:
                todo[key] = _with_hints(sigs, config)
                per_hardware.setdefault(name, []).append(key)
    if not todo:
        return None
    return compile_candidate(source, todo, list(wanted), cache=cache,
                             configs_by_hardware={n: per_hardware.get(n, []) for n in wanted})


def compile_gate(source: str, task: Any, traces: list[ConfigTrace], space: dict[str, list[Any]],
                 hardware: list[str], score: Any, *, seed: int, top_k: int = DEFAULT_TOP_K,
                 cache: Any = None) -> tuple[GateResult, Any, dict[str, Any]]:
    """Compile, exclude what does not compile, re-score: (gate, final score, report dict)."""
    from ...perfmodel import score_candidate
    start = time.perf_counter()
    sigs = launch_signatures(traces)
    default = {n: v[0] for n, v in space.items()}
    outcome: dict[str, dict[str, Any]] = {}          # hardware -> config key -> {"ok", "error", "resources"}
    statuses: dict[str, dict[str, str]] = {}
    hits = misses = 0
    exclude: dict[str, set[str]] = {}
    compiled: set[tuple[str, str]] = set()           # (hardware, config key) compiled so far
    resources: dict[str, dict[str, list[dict[str, Any]]]] = {}     # hardware -> config -> per launch
    reports = []
    for _ in range(ROUNDS):
        report = compile_configs(source, _wanted(score.ranked, default, top_k, hardware), sigs, cache, compiled)
        if report is None:
            break
        reports.append(report.to_dict())
        hits, misses = hits + report.cache_hits, misses + report.cache_misses
        for name, hw in report.hardware.items():
            if hw.configs or name not in statuses:       # a round with nothing new for it keeps its status
                statuses[name] = {"status": hw.status, "target": hw.target or "", "reason": hw.reason}
            for key, cfg in hw.configs.items():
                compiled.add((name, key))
                launches = [k.resources.to_dict() if k.resources else None for k in cfg.kernels]
                outcome.setdefault(name, {})[key] = {"ok": cfg.ok, "error": cfg.error,
                                                     "resources": [r for r in launches if r]}
                if cfg.ok:
                    resources.setdefault(name, {})[key] = launches
                else:
                    exclude.setdefault(name, set()).add(key)
        # the compiler's registers, shared memory and spills replace the model's estimates
        score = score_candidate(task, traces, space, hardware, seed=seed, exclude=exclude, compiled=resources)
        best_known = all(config_key(score.hardware[h].best_params) in outcome.get(h, {})
                         for h in hardware if statuses.get(h, {}).get("status") not in (None, "no_backend")
                         and score.hardware[h].best_params)
        if best_known:
            break
    if resources:                   # the model's own estimates, kept beside the compiled figures
        estimated = score_candidate(task, traces, space, hardware, seed=seed, exclude=exclude)
        for name, hw_score in score.hardware.items():
            if name in resources and name in estimated.hardware:
                hw_score.estimated_latency_s = estimated.hardware[name].latency_s
    details = {"hardware": {}, "cache_hits": hits, "cache_misses": misses, "reports": reports,
               "best": {h: config_key(score.hardware[h].best_params) for h in hardware
                        if h in score.hardware and score.hardware[h].best_params}}
    lines, with_backend, ok_somewhere, first_error = [], 0, False, ""
    for name in hardware:
        status = statuses.get(name, {"status": "untested", "target": "", "reason": "no compilable signature "
                                                                                  "(e.g. a tensor descriptor)"})
        entry = {**status, "configs": outcome.get(name, {})}
        details["hardware"][name] = entry
        if status["status"] == "no_backend":
            lines.append(f"{name}: not compiled ({status['reason']}); the model's estimates stand")
            continue
        if status["status"] == "untested":
            lines.append(f"{name}: not compiled ({status['reason']})")
            continue
        with_backend += 1
        best = score.hardware[name].best_params if name in score.hardware else {}
        mine = outcome.get(name, {}).get(config_key(best)) if best else None
        if any(c["ok"] for c in outcome.get(name, {}).values()):
            ok_somewhere = True
        else:
            first_error = first_error or next((c["error"] for c in outcome.get(name, {}).values() if c["error"]),
                                              status["reason"])
        if mine and mine["ok"]:
            facts = "; ".join(_facts(r, name) for r in mine["resources"]) or "compiled"
            lines.append(f"{name} ({status['target']}): {config_key(best)} compiles: {facts}")
            score.hardware[name].compiled = f"{facts} (at {config_key(best)})"
        else:
            error = (mine or {}).get("error") or first_error or status["reason"]
            lines.append(f"{name} ({status['target']}): no config compiles: {error.splitlines()[0] if error else ''}")
    seconds = time.perf_counter() - start
    if with_backend and not ok_somewhere:
        reason = (f"the kernel does not compile for any GPU of the run ({', '.join(hardware)}): "
                  f"{first_error.strip()[:1500]}")
        return GateResult(name="compile", passed=False, reason=reason, seconds=seconds, details=details), score, details
    return GateResult(name="compile", passed=True, reason="\n".join(lines), seconds=seconds, details=details), \
        score, details


def resident_programs(r: Any, spec: Any) -> tuple[int, str]:
    """Programs one core holds at once with these compiled resources, and what limits it."""
    threads = max(1, r.threads_per_program)
    granule = 8 if r.vendor == "nvidia" else 1                 # registers are allocated in groups per thread
    regs = max(1, -(-r.registers // granule) * granule)
    limits = {"registers": spec.registers_per_core // (regs * threads) if spec.registers_per_core else 10 ** 6,
              "threads": spec.max_threads_per_core // threads,
              "programs per core": spec.max_programs_per_core}
    if r.shared_bytes:
        limits["shared memory"] = spec.smem_bytes_per_core // r.shared_bytes
    what = min(limits, key=limits.get)
    return max(0, int(limits[what])), what


def _facts(resources: dict[str, Any], hardware: str) -> str:
    """The compiler's figures for one kernel, with the occupancy they allow: '40 registers, ...:
    occupancy 6 programs/core (registers)'."""
    from ...compiler import CompiledResources
    from ...perfmodel import load_hardware
    r = CompiledResources.from_dict(resources)
    try:
        programs, limit = resident_programs(r, load_hardware(hardware))
    except Exception:  # noqa: BLE001 - a spec without the figures: the facts alone
        return r.summary()
    return f"{r.summary()}: occupancy {programs} program(s)/core ({limit})"


def write_best_asm(details: dict[str, Any], directory: Any, *, cache: Any = None) -> list[Any]:
    """Write the PTX/SASS or AMDGCN of each hardware's best compiled config (``verify --asm DIR``)."""
    from ...compiler import CompileCache, CompileReport, write_asm
    cache = cache if cache is not None else CompileCache()
    written = []
    for name, key in details.get("best", {}).items():
        for data in details.get("reports", []):
            report = CompileReport.from_dict(data)
            hw = report.hardware.get(name)
            if hw is not None and key in hw.configs and hw.configs[key].ok:
                report.hardware = {name: hw}
                written += write_asm(report, directory, configs={name: key}, cache=cache)
                break
    return written
