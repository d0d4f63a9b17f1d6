"""``compile_candidate``: compile a candidate's launches for the run's hardware, cached, in two jobs at most.

Flow: launch signatures per config -> distinct compiles per Triton target (h100
and h200 share ``cuda:90:32``) -> cache lookups -> the misses in at most
:data:`JOBS` sandboxed jobs side by side (the candidate is imported there, with
the interpreter off; the kernels shared out largest first by source length) ->
as each job returns, the trusted driver assembles its PTX with ptxas and reads
resources (NVIDIA, in parallel) or reads them from the AMDGCN (AMD) -> cache ->
a :class:`CompileReport` with, per hardware and config, each kernel's status,
resources and artefact paths.

Why two jobs: a level-2 chain compiles up to 7 kernels one after another in a job, and
by the compile gate the check and trace jobs have finished, so a CPU is idle; two jobs
halve the frontend's wall time when the kernels are alike, and let ptxas start on one
job's kernels while the other still runs (docs/verifier.md, "Where the time goes").  Only
as many jobs run as fork servers wait idle (the others are started in the background for the
next call): a job that starts its own server pays seconds of imports.
"""

from __future__ import annotations

import ast
import hashlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..candidate import code_text, source_hash
from ..sandbox import SandboxLimits, default_mode, idle_fork_servers, prestart_fork_servers
from ..perfmodel import load_hardware
from .amd import amd_resources
from .asm import add_sass
from .cache import CacheEntry, CompileCache, compile_key
from .jobrun import JOB_ENV, JOB_MODULE, JobAnswer, run_compile_job
from .nvidia import build as nvidia_build
from .report import CompileReport, ConfigCompile, HardwareCompile, KernelCompile
from .resources import CompiledResources
from .signature import LaunchSignature, parse_signature
from .targets import CompileTarget, job_options, resolve_target, toolchain_id


#: Sandboxed compile jobs per call, run side by side.
JOBS = 2


def _kernel_lengths(source: str) -> dict[str, int]:
    """Function name -> its source lines (a compile's cost proxy); empty when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    return {node.name: (node.end_lineno or node.lineno) - node.lineno + 1 for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def share_out(keys: list[str], weight: Mapping[str, float], jobs: int = JOBS) -> list[list[str]]:
    """*keys* in at most *jobs* groups of about equal total *weight*, heaviest first (each group keeps
    the keys' order); no empty group."""
    groups: list[list[str]] = [[] for _ in range(max(1, min(jobs, len(keys))))]
    loads = [0.0] * len(groups)
    for key in sorted(keys, key=lambda k: -weight.get(k, 1.0)):
        i = loads.index(min(loads))
        groups[i].append(key)
        loads[i] += weight.get(key, 1.0)
    order = {k: n for n, k in enumerate(keys)}
    return [sorted(g, key=order.__getitem__) for g in groups if g]


def prestart_compile_servers(count: int = 1) -> None:
    """Start the compile job's fork servers in the background until *count* exist (returns at once)."""
    prestart_fork_servers(JOB_MODULE, JOB_ENV, count)


def _parallel_jobs(mode: str | None, requests: int) -> int:
    """Jobs to run side by side: up to :data:`JOBS`, as many as idle fork servers wait (a second job that
    had to start its own server, seconds of imports, would finish after the first had done it all); when
    fewer wait, the others start in the background for the next call."""
    if requests < 2 or (mode or default_mode()) != "fork":
        return 1
    prestart_compile_servers(JOBS)
    return max(1, min(JOBS, idle_fork_servers(JOB_MODULE, JOB_ENV)))


def _merge_summaries(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The jobs' summaries as one: attempts and reasons of all, the wall time of the slowest."""
    return {"attempts": sum(s.get("attempts", 0) for s in summaries),
            "wall_s": max((s.get("wall_s", 0.0) for s in summaries), default=0.0),
            "mode": next((s["mode"] for s in summaries if s.get("mode")), None),
            "reasons": [r for s in summaries for r in s.get("reasons", [])], "jobs": len(summaries)}


@dataclass
class _Done:
    """A finished compile: its meta record, artefact paths, whether it came from the cache."""

    meta: dict[str, Any]
    artifacts: dict[str, str] = field(default_factory=dict)
    cached: bool = False


def code_identity(source: str) -> str:
    """What a compile of *source* depends on besides the launch signature, hashed: its code with PARAMS's
    values aside (:func:`candidate.code_text`), so candidates that differ only in PARAMS (a search's
    block-size and num_warps edits) share their compiles, which the signature (constexprs, hints) tells
    apart.  The whole source when the code could read PARAMS."""
    code = code_text(source)
    if code is None:
        return source_hash(source)
    return hashlib.sha256(f"code\0{code}".encode()).hexdigest()[:32]


def _triton_version() -> str:
    import triton
    return triton.__version__


def _parse_all(signatures_by_config: Mapping[str, Sequence[Any]]) -> dict[str, list[LaunchSignature]]:
    out: dict[str, list[LaunchSignature]] = {}
    for cfg, sigs in signatures_by_config.items():
        parsed, seen = [], set()
        for i, raw in enumerate(sigs):
            sig = parse_signature(raw, where=f"signatures_by_config[{cfg!r}][{i}]")
            if sig.canonical() not in seen:
                seen.add(sig.canonical())
                parsed.append(sig)
        out[str(cfg)] = parsed
    return out


def _entry_done(entry: CacheEntry, cached: bool) -> _Done:
    return _Done(meta=entry.meta, artifacts=dict(entry.files), cached=cached)


def _finish(key: str, target: CompileTarget, answer: JobAnswer, cache: CompileCache, base_meta: dict[str, Any],
            sass: bool | str) -> _Done:
    """Post-process one job answer (ptxas for NVIDIA) and store it in the cache when it is a verdict."""
    meta = {**base_meta, "ok": False, "error": answer.error, "resources": None, "metadata": answer.metadata,
            "seconds": dict(answer.seconds)}
    files: dict[str, bytes] = {}
    cacheable = answer.cacheable
    if answer.ok and target.vendor == "nvidia":
        ptx = answer.asm["ptx"]
        files["ptx"] = ptx.encode()
        built = nvidia_build(ptx, target, answer.metadata, sass=sass)
        meta["seconds"].update(built.seconds)
        if built.ok:
            files["cubin"] = built.cubin
            if built.sass:
                files["sass"] = built.sass.encode()
            meta.update(ok=True, error="", resources=built.resources.to_dict())
        else:
            meta["error"] = built.error
    elif answer.ok:
        text = answer.asm["amdgcn"]
        files.update(amdgcn=text.encode(), hsaco=answer.hsaco)
        t = time.perf_counter()
        try:
            resources = amd_resources(text, answer.metadata, target.warp_size)
            meta.update(ok=True, error="", resources=resources.to_dict())
        except ValueError as exc:
            meta["error"], cacheable = f"the AMDGCN could not be read: {exc}", False
        meta["seconds"]["amdgcn_parse"] = round(time.perf_counter() - t, 4)
    if not cacheable:
        return _Done(meta=meta)
    return _entry_done(cache.put(key, meta, files), cached=False)


def _fit_error(resources: CompiledResources, hardware: str) -> str:
    """Why a compiled kernel cannot launch on *hardware* (Triton's own load-time checks), or ""."""
    spec = load_hardware(hardware)
    if spec.smem_bytes_per_program and resources.shared_bytes > spec.smem_bytes_per_program:
        return (f"out of resources on {hardware}: the kernel needs {resources.shared_bytes} B of shared memory "
                f"per program, the hardware allows {spec.smem_bytes_per_program} B (smaller blocks or fewer "
                f"num_stages)")
    if spec.max_threads_per_program and resources.threads_per_program > spec.max_threads_per_program:
        return (f"out of resources on {hardware}: {resources.threads_per_program} threads per program, the "
                f"hardware allows {spec.max_threads_per_program} (fewer num_warps)")
    return ""


def compile_candidate(source: str, signatures_by_config: Mapping[str, Sequence[LaunchSignature | dict]],
                      hardware: Sequence[str], *, cache: CompileCache | str | Path | None = None,
                      limits: SandboxLimits | None = None, sass: bool | str = "auto", workers: int | None = None,
                      mode: str | None = None,
                      configs_by_hardware: Mapping[str, Sequence[str]] | None = None,
                      cached_only: bool = False, known: set[str] | None = None) -> CompileReport:
    """Compile every launch of every config for every hardware; never raises for the candidate's faults.

    *signatures_by_config*: config key (e.g. ``candidate.config_key(config)``) ->
    the launch-signature records of that config's ``launch`` (dicts or
    :class:`LaunchSignature`).  *hardware*: names from ``hardware/``.  *cache*:
    a :class:`CompileCache`, a directory, or None (the default location).
    *sass*: disassemble every cubin (True), none (False) or those that spill
    ("auto").  *workers*: parallel ptxas runs (default: CPUs).  *configs_by_hardware*: when
    given, only these config keys are compiled for each hardware (others: every config).
    *cached_only*: compile nothing; report only the configs whose every launch is in the cache
    (free: the compile gate's look-up of configs that share launches with compiled ones) and, with
    *known*, among those compile keys (what one verify compiled itself: its outcome must not depend
    on what else the cache holds).  Raises
    ``SignatureError`` for malformed records and ``HardwareError`` for unknown
    hardware (the caller's mistakes).
    """
    start = time.perf_counter()
    sigs = _parse_all(signatures_by_config)
    cache = cache if isinstance(cache, CompileCache) else CompileCache(cache)
    src_hash, version = code_identity(source), _triton_version()
    targets = {name: resolve_target(name) for name in hardware}
    compiles: dict[str, tuple[LaunchSignature, CompileTarget]] = {}
    plan: dict[str, dict[str, list[str]]] = {}
    for name, (target, _) in targets.items():
        if target is None:
            continue
        toolchain = toolchain_id(target)
        plan[name] = {}
        for cfg, cfg_sigs in sigs.items():
            if configs_by_hardware is not None and name in configs_by_hardware \
                    and cfg not in configs_by_hardware[name]:
                continue
            keys = []
            for sig in cfg_sigs:
                key = compile_key(src_hash, sig.canonical(), target.text, version, toolchain)
                compiles.setdefault(key, (sig, target))
                keys.append(key)
            plan[name][cfg] = keys
    done: dict[str, _Done] = {}
    for key in compiles:
        if cached_only and known is not None and key not in known:
            continue
        entry = cache.get(key)
        if entry is not None:
            done[key] = _entry_done(entry, cached=True)
    misses = [k for k in compiles if k not in done]
    if cached_only and misses:
        plan = {name: {cfg: keys for cfg, keys in configs.items() if all(k in done for k in keys)}
                for name, configs in plan.items()}
        compiles = {k: v for k, v in compiles.items() if k in done}
        misses = []
    job_summary: dict[str, Any] = {}
    stage_seconds: dict[str, float] = {}
    if misses:
        requests = {k: {"id": k, "signature": compiles[k][0].to_dict(), "target": compiles[k][1].text,
                        "options": job_options(compiles[k][1])} for k in misses}
        lengths = _kernel_lengths(source)
        groups = share_out(misses, {k: float(lengths.get(compiles[k][0].kernel, 1)) for k in misses},
                           jobs=_parallel_jobs(mode, len(misses)))
        t = time.perf_counter()

        def run_group(group: list[str]) -> tuple[dict[str, Any], list[_Done]]:
            answers, summary = run_compile_job(source, [requests[k] for k in group],
                                               {k: compiles[k][1].vendor for k in group}, limits=limits, mode=mode)

            def finish(key: str) -> _Done:
                sig, target = compiles[key]
                base = {"key": key, "kernel": sig.kernel, "signature": sig.to_dict(), "target": target.text,
                        "triton_version": version, "toolchain": toolchain_id(target), "source_hash": src_hash}
                return _finish(key, target, answers[key], cache, base, sass)

            with ThreadPoolExecutor(max_workers=max(1, workers or os.cpu_count() or 1)) as pool:
                return summary, list(pool.map(finish, group))

        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            ran = list(pool.map(run_group, groups))
        for group, (_, results) in zip(groups, ran):
            done.update(zip(group, results))
        job_summary = _merge_summaries([summary for summary, _ in ran])
        stage_seconds["jobs_and_post_process_wall"] = round(time.perf_counter() - t, 4)
        stage_seconds["job_wall"] = job_summary.get("wall_s", 0.0)
        for key in misses:
            for stage, s in done[key].meta.get("seconds", {}).items():
                stage_seconds[stage] = round(stage_seconds.get(stage, 0.0) + s, 4)
    if sass is True:                              # cached entries made without SASS get it now
        for key, d in list(done.items()):
            if d.artifacts and "sass" not in d.artifacts:
                entry = add_sass(cache, key, compiles[key][1])
                done[key] = _entry_done(entry, cached=d.cached) if entry is not None else d
    report = CompileReport(source_hash=src_hash, triton_version=version, hardware={},
                           cache_hits=len(compiles) - len(misses), cache_misses=len(misses),
                           stage_seconds=stage_seconds, job=job_summary)
    for name, (target, why) in targets.items():
        report.hardware[name] = _hardware_result(name, target, why, plan.get(name, {}), done)
    report.seconds = round(time.perf_counter() - start, 4)
    return report


def _kernel_result(key: str, d: _Done, hardware: str) -> KernelCompile:
    meta = d.meta
    resources = CompiledResources.from_dict(meta["resources"]) if meta.get("resources") else None
    ok, error = bool(meta.get("ok")), str(meta.get("error", ""))
    if ok and resources is not None:
        error = _fit_error(resources, hardware)
        ok = not error
    return KernelCompile(kernel=meta.get("kernel", ""), signature=meta.get("signature", {}), key=key, ok=ok,
                         error=error, cached=d.cached, resources=resources, artifacts=dict(d.artifacts),
                         seconds=dict(meta.get("seconds", {})))


def _hardware_result(name: str, target: CompileTarget | None, why: str, configs: dict[str, list[str]],
                     done: dict[str, _Done]) -> HardwareCompile:
    if target is None:
        return HardwareCompile(hardware=name, target=None, status="no_backend", reason=why)
    out = HardwareCompile(hardware=name, target=target.text, status="ok")
    for cfg, keys in configs.items():
        kernels = [_kernel_result(k, done[k], name) for k in keys]
        failed = next((k for k in kernels if not k.ok), None)
        error = (f"{failed.kernel}: {failed.error}" if failed else
                 ("" if kernels else "the config launches no kernel"))
        out.configs[cfg] = ConfigCompile(ok=not error, error=error, kernels=kernels)
    n_ok = sum(c.ok for c in out.configs.values())
    if n_ok < len(out.configs):
        out.status = "partial" if n_ok else "error"
        out.reason = next(f"config {k or 'default'}: {c.error}" for k, c in out.configs.items() if not c.ok)
    return out
