"""The compile gate: the model's picks compiled for each GPU of the run, ahead of time, on the CPU.

After the model has ranked the configs per hardware, each hardware's own top ``k``
(default 1) is compiled for it, for every hardware with a Triton backend in the installed
wheel (:mod:`kernelfoundry.compiler`: a sandboxed job imports the candidate with the
interpreter off; ptxas and cuobjdump run in the driver), from the launch signatures the
trace recorded at the first target shape (Triton's own binder: divisibility by 16,
constexprs, launch options).  The compiler's registers, shared memory and spills then
replace the model's estimates and the model ranks again: while an uncompiled config ranks
ahead of every compiled one, the next round compiles the (at most ``k``) configs ranked
ahead of the best compiled one, for at most :data:`MAX_ROUNDS` rounds; after that the
configs never compiled are dropped, so the pick reported for a GPU has always compiled
for it.  A config that does not compile for a hardware is invalid there; when nothing
has compiled for a hardware after a round, the default config is compiled with the next
(a safety net: the default's blocks are usually the smallest).  A hardware where nothing
compiles gets no valid config; when nothing compiles anywhere the candidate fails here,
with the compiler's message.  Hardware without a backend (NPUs, Intel GPUs here) keeps
the model's estimates and says so.  Artefacts are cached (see docs/compiler.md).

Why lazily (top 1, then what overtakes it) rather than a fixed top 4: a compile costs
1-9 s of ptxas per kernel of a chain, a level-2 chain has up to 7 kernels, and compiled
configs usually keep their rank; four configs per hardware made the gate the slowest
stage of a cold verify (docs/verifier.md).
"""

from __future__ import annotations

import time
from typing import Any

from ...candidate import HINT_PARAMS, config_key
from ...records import ConfigTrace, GateResult

DEFAULT_TOP_K = 1
MAX_ROUNDS = 2                     # compile jobs per verify, over all the pipeline's calls
RANKED_AHEAD = 16                  # configs looked up in the cache per round (the model ranks 16)


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


def _ahead(ranked: list[dict[str, Any]] | None, ok: dict[str, Any]) -> list[dict[str, Any]]:
    """The configs *ranked* ahead of the first one in *ok* (compiled there): all of them when none is."""
    out = []
    for config in ranked or []:
        if config_key(config) in ok:
            break
        out.append(config)
    return out


def _wanted(ranked: dict[str, list[dict[str, Any]]], default: dict[str, Any], top_k: int, hardware: list[str],
            compiled: set[tuple[str, str]], resources: dict[str, dict[str, Any]],
            statuses: dict[str, dict[str, str]]) -> dict[str, list[dict[str, Any]]]:
    """Per hardware with a backend: the (at most *top_k*) configs not compiled yet ranked ahead of its
    best compiled one, and the default when nothing has compiled for it yet (after a first round)."""
    out = {}
    for name in hardware:
        if statuses.get(name, {}).get("status") == "no_backend":
            continue
        ok = resources.get(name, {})
        configs = {config_key(c): c for c in _ahead(ranked.get(name), ok) if (name, config_key(c)) not in compiled}
        configs = dict(list(configs.items())[:top_k])
        if not ok and any(n == name for n, _ in compiled):
            configs.setdefault(config_key(default), default)
        out[name] = list(configs.values())
    return out


def compile_configs(source: str, wanted: dict[str, list[dict[str, Any]]], sigs_by_kernel: dict[str, Any],
                    cache: Any, already: set[tuple[str, str]], *, cached_only: bool = False,
                    known: set[str] | None = None) -> Any:
    """Compile each hardware's *wanted* configs (full configs) not compiled for it yet, in one job;
    returns the compiler's report (None when there is nothing to do).  *cached_only*: compile
    nothing, report the wanted configs whose every launch is already in the cache, among the compile
    keys *known*."""
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
    return compile_candidate(source, todo, list(wanted), cache=cache, cached_only=cached_only, known=known,
                             configs_by_hardware={n: per_hardware.get(n, []) for n in wanted})


def new_budget() -> dict[str, Any]:
    """One verify's compile budget: :data:`MAX_ROUNDS` compile jobs, the compile keys seen and missed, and
    per hardware the configs that compiled (looked up again by the verify's later calls)."""
    return {"rounds": MAX_ROUNDS, "seen": set(), "missed": set(), "compiled": {}}


def _uncompiled_ahead(score: Any, resources: dict[str, dict[str, Any]]) -> dict[str, set[str]]:
    """Per hardware with a compiled config: the configs the model still ranks ahead of its best
    compiled one (never compiled: the rounds ran out)."""
    out = {name: {config_key(c) for c in _ahead(score.ranked.get(name), ok)} for name, ok in resources.items()}
    return {name: keys for name, keys in out.items() if keys}


def compile_gate(source: str, task: Any, traces: list[ConfigTrace], space: dict[str, list[Any]],
                 hardware: list[str], score: Any, *, seed: int, top_k: int = DEFAULT_TOP_K,
                 cache: Any = None, budget: dict[str, Any] | None = None) -> tuple[GateResult, Any, dict[str, Any]]:
    """Compile, exclude what does not compile, re-score: (gate, final score, report dict).  *budget*
    (:func:`new_budget`, shared by one verify's calls) bounds the compile jobs and counts the distinct
    compiles seen and missed over them (the details' ``cache_hits`` and ``cache_misses``)."""
    from ...perfmodel import score_candidate
    start = time.perf_counter()
    sigs = launch_signatures(traces)
    default = {n: v[0] for n, v in space.items()}
    outcome: dict[str, dict[str, Any]] = {}          # hardware -> config key -> {"ok", "error", "resources"}
    statuses: dict[str, dict[str, str]] = {}
    exclude: dict[str, set[str]] = {}
    compiled: set[tuple[str, str]] = set()           # (hardware, config key) compiled so far
    resources: dict[str, dict[str, list[dict[str, Any]]]] = {}     # hardware -> config -> per launch
    reports = []
    budget = budget if budget is not None else new_budget()

    def absorb(report: Any) -> None:
        reports.append(report.to_dict())
        for hw in report.hardware.values():
            for cfg in hw.configs.values():
                for kernel in cfg.kernels:
                    budget["seen"].add(kernel.key)
                    if not kernel.cached:
                        budget["missed"].add(kernel.key)
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

    def run(wanted: dict[str, list[dict[str, Any]]], cached_only: bool) -> Any:
        report = compile_configs(source, wanted, sigs, cache, compiled, cached_only=cached_only,
                                 known=budget["seen"] if cached_only else None)
        if report is not None:
            absorb(report)
            for name, configs in wanted.items():
                for config in configs:
                    if config_key(config) in resources.get(name, {}):
                        budget["compiled"].setdefault(name, {})[config_key(config)] = config
        return report

    # the configs this verify's earlier calls compiled, wherever the model ranks them now: the pick can
    # always fall back on one of them when the budget is spent
    if budget["compiled"]:
        carried = run({name: list(configs.values()) for name, configs in budget["compiled"].items()},
                      cached_only=True)
        if carried is not None and any(hw.configs for hw in carried.hardware.values()):
            score = score_candidate(task, traces, space, hardware, seed=seed, exclude=exclude, compiled=resources)
    while True:
        # configs ranked ahead of the best compiled one whose every launch this verify has compiled already
        # (they share launches with compiled configs): their figures are free.  Only this verify's own
        # compiles count, so the outcome never depends on what else the cache holds.
        for _ in range(RANKED_AHEAD):
            report = run(_wanted(score.ranked, default, RANKED_AHEAD, hardware, compiled, resources, statuses),
                         cached_only=True)
            if report is None or not any(hw.configs for hw in report.hardware.values()):
                break
            # the compiler's registers, shared memory and spills replace the model's estimates
            score = score_candidate(task, traces, space, hardware, seed=seed, exclude=exclude, compiled=resources)
        if budget["rounds"] <= 0:
            break
        report = run(_wanted(score.ranked, default, top_k, hardware, compiled, resources, statuses),
                     cached_only=False)
        if report is None:
            break
        budget["rounds"] -= 1
        score = score_candidate(task, traces, space, hardware, seed=seed, exclude=exclude, compiled=resources)
    # the picks kept moving: the model picks among the compiled configs (the ranking holds 16 at a time)
    dropped: dict[str, set[str]] = {}
    while ahead := _uncompiled_ahead(score, resources):
        for name, keys in ahead.items():
            dropped.setdefault(name, set()).update(keys)
            exclude.setdefault(name, set()).update(keys)
        score = score_candidate(task, traces, space, hardware, seed=seed, exclude=exclude, compiled=resources)
    if resources:                   # the model's own estimates, kept beside the compiled figures
        estimated = score_candidate(task, traces, space, hardware, seed=seed, exclude=exclude)
        for name, hw_score in score.hardware.items():
            if name in resources and name in estimated.hardware:
                hw_score.estimated_latency_s = estimated.hardware[name].latency_s
    details = {"hardware": {}, "cache_hits": len(budget["seen"] - budget["missed"]),
               "cache_misses": len(budget["missed"]), "reports": reports,
               "compile_jobs": MAX_ROUNDS - budget["rounds"],
               "dropped_uncompiled": {name: len(keys) for name, keys in dropped.items()},
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
            unconfirmed = len(dropped.get(name, ()))
            among = (f" (picked among the {sum(c['ok'] for c in outcome[name].values())} compiled configs; "
                     f"{unconfirmed} ranked ahead on the model's estimates alone were not compiled)"
                     if unconfirmed else "")
            lines.append(f"{name} ({status['target']}): {config_key(best)} compiles{among}: {facts}")
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
