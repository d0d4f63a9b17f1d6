"""The verifier pipeline: hack gate -> sandboxed checks and trace -> judge -> model -> compile -> confirm.

``verify(task, source, hardware)`` always returns a :class:`VerifyResult`; it raises
only for the caller's own mistakes (unknown hardware names) or when the sandbox
cannot confine a child on this machine, never for anything the candidate does.

The candidate runs only inside the sandbox: a *check* job runs the planned
correctness runs and reports raw outputs, a *trace* job (beside it, cancelled when the
checks fail) runs sampled programs at the target shapes and reports raw events, and
the confirm gate's check job runs the configs the model picked at their span shapes.  Everything that decides the verdict runs
here, in a process that never imports candidate code: the plan (inputs, shapes,
program orders), the comparison with the reference (:mod:`correctness`), the
weighting and counting of trace events (:mod:`counts`), the coverage and
plausibility checks (:mod:`plausibility`), the model and the descriptors.  The
child's reports are untrusted data: malformed ones fail the ``sandbox`` gate.
See ``docs/verifier.md`` for the threat model.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from ..candidate import HINT_PARAMS, ParamSpaceError, config_key, kernel_configs, parse_param_space
from ..task import Task
from .judge.correctness import Judge, MalformedReport, plan_runs
from .judge.anticheat import hack_gate
from .judge.compile_gate import new_budget as new_compile_budget
from ..harness.loader import WALL_FACTOR
from ..harness.payload import child_task
from ..records import INCONCLUSIVE, ConfigTrace, GateResult, VerifyResult
from ..sandbox import (DATA_FILE, BlobReader, GiB, SandboxIsolationError, SandboxLimits, SandboxOutcome,
                       default_mode, idle_fork_servers, run_sandboxed)
from .dense_rounds import DenseRounds, runner_up
from .trace_jobs import jit_kernels, merge_judgements, split_configs, stopped_at, trace_job_count
from .judge.target_outputs import check_target_outputs
from .trace.cache import code_context
from .trace.counts import MalformedTrace, build_config_trace

CHILD_MODULE = "kernelfoundry.evaluate.child.entry"
#: "0" turns the side-by-side jobs off where a caller does not say (see :func:`_verify`).
SIDE_BY_SIDE_ENV = "KERNELFOUNDRY_SIDE_BY_SIDE"
CHILD_GATES = ("load", "correctness", "trace")
TRACE_TIMEOUT = "tracing did not finish within"          # the trace child's time-limit message
#: How an allocation refused by the trace child's address-space limit is reported (torch, Python). A
#: kernel can raise these itself: it then gets an inconclusive verdict, which admits nothing.
OUT_OF_MEMORY = ("launch raised RuntimeError: [enforce fail at alloc_cpu.cpp", "launch raised MemoryError")
#: The trace child's data file past the sandbox's file limit: only the verifier writes files there.
FILE_LIMIT = "launch raised OSError: [Errno 27] File too large"
DEFAULT_TIMEOUT_S = 120.0
#: Provisional (sparse) traces rank the configs and only the picked ones are traced densely, when there
#: are at least LAZY_MIN_CONFIGS configs to trace (fewer: the second trace job costs more than it saves).
LAZY_DENSE_TRACES = True
LAZY_MIN_CONFIGS = 3
_TAIL_IN_REASON = 800


def default_limits(task: Task, timeout_s: float = DEFAULT_TIMEOUT_S) -> SandboxLimits:
    """Sandbox limits for *task*: the address space must hold its target-shape tensors.

    Target-shape inputs and outputs are allocated but only sampled programs touch them
    (large inputs repeat one tile, see :mod:`tiled`), so virtual memory is sized as
    4 GiB plus three times the largest target input and output set (a launch allocates its outputs
    and intermediates of their size: an 8.5 GB convolution output was refused before); real memory
    is held to 4 GB by the RSS watchdog.

    *timeout_s* is CPU time, so a verdict does not change with the machine's load; the wall-clock
    limit, WALL_FACTOR times that, stops a job that waits instead of computing.
    """
    from .judge.plausibility import output_sizes
    largest = max(task.input_bytes(env) + sum(output_sizes(task, env)) for env in task.target_shapes)
    return SandboxLimits(cpu_s=timeout_s, wall_s=WALL_FACTOR * timeout_s,
                         address_space_bytes=max(8 * GiB, 4 * GiB + 3 * largest))


def child_timeouts(limits: SandboxLimits) -> dict[str, float]:
    """The child's own per-launch and per-trace limits (CPU seconds), inside the sandbox's CPU limit,
    so that a hang is reported by the gate it happened in."""
    budget = limits.cpu_s if limits.cpu_s is not None else limits.wall_s
    return {"launch_timeout_s": max(1.0, min(30.0, 0.25 * budget)),
            "trace_timeout_s": max(1.0, min(60.0, 0.4 * budget))}


def check_hardware(names: list[str]) -> None:
    """Raise HardwareError for unknown names (once the hardware library exists)."""
    try:
        from ..perfmodel import resolve_hardware
    except ImportError:
        return
    resolve_hardware(names)


#: Verifies running in this process now: the side-by-side jobs (a second confirm job, the runner-up's
#: dense trace, a second trace job) run only for a verify that has the process's fork servers to itself,
#: as in a search worker or a bench; verifies from several threads share the servers and the CPUs.
_IN_FLIGHT = [0]
_IN_FLIGHT_LOCK = threading.Lock()


def _alone() -> bool:
    with _IN_FLIGHT_LOCK:
        return _IN_FLIGHT[0] <= 1


def verify(task: Task, source: str, hardware: list[str] | None = None, **options: Any) -> VerifyResult:
    """Run every gate on *source* for *task*; see :func:`_verify` and the module docstring."""
    with _IN_FLIGHT_LOCK:
        _IN_FLIGHT[0] += 1
    try:
        return _verify(task, source, hardware, **options)
    finally:
        with _IN_FLIGHT_LOCK:
            _IN_FLIGHT[0] -= 1


def _verify(task: Task, source: str, hardware: list[str] | None = None, *, seed: int = 0,
            limits: SandboxLimits | None = None, max_kernel_configs: int = 8, trace_programs: int = 4,
            tune: bool = True, mode: str | None = None, compile: bool = True, compile_top_k: int = 1,
            compile_cache: Any = None, trace_cache: Any = None, dense_traces: bool = False,
            side_by_side: bool | None = None) -> VerifyResult:
    """Run every gate on *source* for *task*; see the module docstring.

    *hardware* defaults to the task's list.  *limits* defaults to
    :func:`default_limits`.  ``tune=False`` checks, traces and scores only the
    default config (the first value of every PARAMS entry; an ablation).
    *mode* picks the sandbox mode ("fork"/"spawn").  ``compile=False`` skips the
    compile gate (the model keeps its estimates everywhere); *compile_top_k* configs
    per hardware are compiled per round (the model's best, then what overtakes it), cached in *compile_cache* (a directory or None for
    the default location, see docs/compiler.md).  *trace_cache* (a :class:`TraceCache`) holds the
    traces of configs a candidate differing only in PARAMS had traced; only the others are traced.
    ``dense_traces=True`` traces every config densely at once (no provisional traces): for callers that
    report every config's count, like the fidelity tool's autotuned rows.  ``side_by_side=False`` never
    runs the extra side-by-side jobs (a second trace job, the confirm gate's second job, the runner-up's
    dense trace): for a search whose workers already fill the CPUs; verdicts are the same either way.
    None: on unless the environment sets ``KERNELFOUNDRY_SIDE_BY_SIDE=0`` (the test suite does: its
    pytest-xdist workers fill the CPUs).
    """
    if side_by_side is None:
        side_by_side = os.environ.get(SIDE_BY_SIDE_ENV, "1") != "0"
    start = time.perf_counter()
    hardware = list(hardware or task.hardware)
    check_hardware(hardware)

    def elapsed() -> float:
        return round(time.perf_counter() - start, 3)

    try:
        hack = hack_gate(source)
    except SyntaxError as exc:
        return VerifyResult.failed("load", f"the source does not parse: line {exc.lineno}: {exc.msg}.",
                                   seconds=elapsed())
    except (ValueError, MemoryError, RecursionError) as exc:
        return VerifyResult.failed("load", f"the source cannot be parsed: {exc}.", seconds=elapsed())
    gates = [hack]
    if not hack.passed:
        return VerifyResult.failed("hack", hack.reason, gates=gates, seconds=elapsed())
    try:
        space = parse_param_space(source)
    except ParamSpaceError as exc:
        return VerifyResult.failed("load", f"{exc}.", gates=gates, seconds=elapsed())
    if not tune:
        space = {name: values[:1] for name, values in space.items()}
    limits = limits or default_limits(task)
    configs = kernel_configs(space, cap=max(1, max_kernel_configs), seed=seed)
    base = {"source": source, "task": child_task(task.to_dict()), "kernel_configs": configs,
            "hints": {n: space[n][0] for n in HINT_PARAMS if n in space}, "seed": seed,
            **child_timeouts(limits)}

    def stop(traces: list[ConfigTrace] | None = None) -> VerifyResult:
        # the space is the driver's own static parse, never the child's
        return VerifyResult(passed=False, gate=gates[-1].name, reason=gates[-1].reason, gates=gates,
                            param_space=space, traces=traces or [], seconds=elapsed())

    plan = plan_runs(task, configs, seed=seed)
    context = code_context(source, base["task"], base["hints"], seed, trace_programs) if trace_cache else None
    cached = {i: trace_cache.get(context, c) for i, c in enumerate(configs)} if context else {}
    to_trace = [c for i, c in enumerate(configs) if cached.get(i) is None]
    by_config = _runs_by_config(plan)
    checked = _passed_checks(trace_cache, context, by_config) if context else {}
    to_check = [r for r in plan if config_key(r["config"]) not in checked]
    # Several configs to trace: provisional (sparse) traces rank them, and only the configs the model
    # picks are traced densely (docs/verifier.md, "Lazy dense traces"); one or two are dense at once.
    dense = dense_traces or len(to_trace) < LAZY_MIN_CONFIGS or not LAZY_DENSE_TRACES
    # The trace job needs nothing from the check job: it runs beside it and is cancelled if the checks fail;
    # its configs go to two jobs when a third fork server waits idle (trace_jobs.py).
    cancel = threading.Event()
    jobs = trace_job_count(CHILD_MODULE, len(to_trace), mode, shares_waves=not dense and jit_kernels(source) > 1) \
        if side_by_side and _alone() else 1
    parts = split_configs(to_trace, jobs) if to_trace else []
    with ThreadPoolExecutor(max_workers=max(1, len(parts))) as pool:
        trace_jobs = [(part, pool.submit(run_sandboxed, CHILD_MODULE, {
            **base, "kind": "trace", "trace_programs": trace_programs, "kernel_configs": part, "dense": dense},
            limits, mode=mode, extra_files=(DATA_FILE,), cancel=cancel)) for part in parts]
        try:
            outcome = run_sandboxed(CHILD_MODULE, {**base, "kind": "check", "runs": to_check, "probe_configs": configs},
                                    limits, mode=mode, extra_files=(DATA_FILE,))
            load, report = read_job(outcome, "check")
            gates += [_own_limit(g, outcome) for g in load]
            if not gates[-1].passed:
                return stop()
            correctness = judge_checks(task, to_check, report["check"], outcome, seed=seed)
            correctness.seconds += outcome.wall_s              # the check job, then its judgement
            correctness.details["cached_runs"] = len(plan) - len(to_check)
            gates.append(correctness)
            if not correctness.passed:
                return stop()
            if compile and (mode or default_mode()) == "fork":   # the check's CPU is free while the trace runs:
                from ..compiler import prestart_compile_servers          # the compile job's server starts there
                prestart_compile_servers()
            traced = [(part, job.result()) for part, job in trace_jobs]
        finally:
            if any(not job.done() for _, job in trace_jobs) or not gates[-1].passed:
                cancel.set()
                for _, job in trace_jobs:
                    _settle(job)
    probes = report["check"].get("probes")
    records = list(zip(to_check, report["check"].get("runs", [])))
    if context:
        _keep_checks(trace_cache, context, by_config, checked, records)
    records += [pair for runs, kept in checked.values() for pair in zip(runs, kept)]
    gate, traces = GateResult(name="trace", passed=True, details={"traces": 0, "seconds": []}), []
    if traced:
        judged, load_failures = [], []
        for part, outcome in traced:
            load, report = read_job(outcome, "trace")
            if not load[-1].passed:            # it loaded for the checks: a failure now belongs to a later gate
                details, reason = dict(load[-1].details), load[-1].reason
                if verifier_limit(outcome):                                 # the trace's own cost
                    details["inconclusive"], reason = True, f"{INCONCLUSIVE} ({reason})"
                judged.append((part, GateResult(name="trace", passed=False, reason=reason, seconds=load[-1].seconds,
                                                details=details), [], None))
                load_failures.append(judged[-1][1])
                continue
            part_gate, part_traces = judge_trace(report["trace"], outcome, part, task, seed, dense=dense)
            judged.append((part, part_gate, part_traces, stopped_at(report["trace"])))
        gate, traces = merge_judgements(to_trace, len(task.target_shapes), judged) if len(judged) > 1 \
            else judged[0][1:3]
        if any(gate is failed for failed in load_failures):
            gates.append(gate)
            return stop()
    if context and gate.passed:
        _keep_traces(trace_cache, context, to_trace, traces)
    gate.details["cached_configs"] = len(configs) - len(to_trace)
    traces = _in_config_order(traces + [ConfigTrace.from_dict(d) for i in sorted(cached) if cached[i]
                                        for d in cached[i]], configs)
    gates.append(gate)
    if not gate.passed:
        return stop(traces)

    def run_checks(runs: list[dict[str, Any]]) -> tuple[Any, Any]:
        job = run_sandboxed(CHILD_MODULE, {**base, "kind": "check", "runs": runs}, limits, mode=mode,
                            extra_files=(DATA_FILE,))
        failed, result = read_job(job, "check")
        if not failed[-1].passed:
            return _own_limit(failed[-1], job), None
        return BlobReader(job.files.get(DATA_FILE)), result["check"]

    def dense_job(todo: list[dict[str, Any]], cancel: threading.Event | None) -> SandboxOutcome:
        return run_sandboxed(CHILD_MODULE, {**base, "kind": "trace", "trace_programs": trace_programs,
                                            "kernel_configs": todo, "dense": True}, limits, mode=mode,
                             extra_files=(DATA_FILE,), cancel=cancel)

    def judge_dense(job: SandboxOutcome, todo: list[dict[str, Any]]) -> tuple[GateResult, list[ConfigTrace]]:
        failed, result = read_job(job, "trace")
        if not failed[-1].passed:
            return _own_limit(failed[-1], job, stage="trace"), []
        dense_gate, dense_traces = judge_trace(result["trace"], job, todo, task, seed, dense=True)
        if context and dense_gate.passed:
            _keep_traces(trace_cache, context, todo, dense_traces)
        return dense_gate, dense_traces

    def side_by_side() -> int:
        """Check jobs the confirm gate may run at once (and whether the runner-up's dense trace may run beside
        the pick's): two when two of the child's fork servers wait idle (the check and trace jobs started
        them and are done) and no other verify of this process shares them, else one (a job that starts
        its own server pays seconds of imports)."""
        if (mode or default_mode()) != "fork" or not side_by_side or not _alone():
            return 1
        return 2 if idle_fork_servers(CHILD_MODULE) >= 2 else 1

    confirm = {"task": task, "traces": traces, "probes": probes, "records": records,
               "first_call": len(plan) + 1, "run_checks": run_checks, "side_by_side": side_by_side}
    densify = DenseRounds(dense_job, judge_dense, side_by_side)
    try:
        return score_and_describe(task, traces, space, hardware, gates, seed=seed,
                                  seconds_so_far=time.perf_counter() - start,
                                  compile_with={"source": source, "top_k": compile_top_k, "cache": compile_cache,
                                                "budget": new_compile_budget()}
                                  if compile else None, confirm_with=confirm, densify=densify)
    finally:
        densify.close()


def _runs_by_config(plan: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by_config: dict[str, list[dict[str, Any]]] = {}
    for run in plan:
        by_config.setdefault(config_key(run["config"]), []).append(run)
    return by_config


def _passed_checks(cache: Any, context: str, by_config: dict[str, list[dict[str, Any]]]
                   ) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Configs whose planned check runs all passed in this code context (a PARAMS-only sibling's): their
    runs and what was kept of them (the confirm gate still reads what those runs covered)."""
    checked = {}
    for key, runs in by_config.items():
        kept = cache.get_checks(cache.checks_key(context, runs))
        if isinstance(kept, list) and len(kept) == len(runs):
            checked[key] = (runs, kept)
    return checked


def _keep_checks(cache: Any, context: str, by_config: dict[str, list[dict[str, Any]]], checked: dict[str, Any],
                 records: list[tuple[dict[str, Any], Any]]) -> None:
    """Keep the branch arms and kernels of every newly passed config's check runs."""
    for key, runs in by_config.items():
        if key not in checked:
            kept = [{"arms": r.get("arms"), "kernels": r.get("kernels")} for p, r in records
                    if config_key(p["config"]) == key and isinstance(r, dict)]
            cache.put_checks(cache.checks_key(context, runs), kept)


def _keep_traces(cache: Any, context: str, configs: list[dict[str, Any]], traces: list[ConfigTrace]) -> None:
    for config in configs:
        cache.put(context, config, [t.to_dict() for t in traces if t.config == config])


def _in_config_order(traces: list[ConfigTrace], configs: list[dict[str, Any]]) -> list[ConfigTrace]:
    """Shape-major, then the order of *configs*: the order the trace child records them in."""
    keys = [config_key(c) for c in configs]
    return sorted(traces, key=lambda t: (t.shape_index, keys.index(config_key(t.config))
                                         if config_key(t.config) in keys else len(keys)))


def _settle(job: Future) -> None:
    """Wait for a cancelled job; only a sandbox that cannot confine its child is worth raising."""
    try:
        job.result()
    except SandboxIsolationError:
        raise
    except Exception:  # noqa: BLE001 - the verdict is already decided by an earlier gate
        pass


def read_job(outcome: SandboxOutcome, kind: str) -> tuple[list[GateResult], dict[str, Any] | None]:
    """The load gate and the child's whole result (holding a *kind* report when the load passed);
    a failure gate and None when there is no usable result."""
    result = outcome.result
    if not outcome.ok or result is None:
        return [sandbox_failure(outcome)], None
    if result.get("error"):
        gate = outcome.progress if outcome.progress in CHILD_GATES else "sandbox"
        return [GateResult(name=gate, passed=False, seconds=outcome.wall_s,
                           reason=f"the verifier failed inside the sandbox: {str(result['error'])[:500]}")], None
    try:
        gates = [GateResult.from_dict(g) for g in result["gates"]]
        if len(gates) != 1 or gates[0].name != "load" or not isinstance(gates[0].passed, bool) \
                or not isinstance(gates[0].reason, str):
            raise ValueError(f"unexpected gates {[g.name for g in gates]}")
        failed_checks = isinstance(result.get("check"), dict) and result["check"].get("error") is not None
        if gates[0].passed and not isinstance(result.get(kind), dict) and not failed_checks:
            raise ValueError(f"the load gate passed but no {kind} report came back")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return [_malformed(outcome, str(exc))], None
    return gates, result


def verifier_limit(outcome: SandboxOutcome) -> bool:
    """The job was stopped by the sandbox's memory, wall-clock or CPU limit (not by a crash or a
    refused system call): limits sized for the verifier's whole plan of runs, not for one launch."""
    return outcome.killed_by in ("memory", "wall") or outcome.signal == signal.SIGXCPU


def _own_limit(gate: GateResult, outcome: SandboxOutcome, stage: str = "correctness") -> GateResult:
    """*gate* marked inconclusive when a job ran past the verifier's own limits after the load (in
    *stage*: the checks or the trace).  Every launch has its own CPU limit inside the job, and a
    launch past it fails the kernel; a job stopped with no launch past it ran out of the budget
    of the verifier's whole plan of runs."""
    if gate.passed or outcome.progress != stage or not verifier_limit(outcome):
        return gate
    return GateResult(name=gate.name, passed=False, reason=f"{INCONCLUSIVE} ({gate.reason})", seconds=gate.seconds,
                      details={**gate.details, "inconclusive": True})


def judge_checks(task: Task, plan: list[dict[str, Any]], report: Any, outcome: SandboxOutcome, *,
                 seed: int) -> GateResult:
    """The correctness gate over *plan* from a child's report (a malformed report fails ``sandbox``)."""
    if not isinstance(report, dict):
        return _malformed(outcome, "no check report")
    try:
        return Judge(task, plan, seed=seed).judge(report, BlobReader(outcome.files.get(DATA_FILE)))
    except MalformedReport as exc:
        return _malformed(outcome, str(exc))


def _malformed(outcome: SandboxOutcome, why: str) -> GateResult:
    return GateResult(name="sandbox", passed=False, seconds=outcome.wall_s,
                      reason=f"the sandboxed checks returned a malformed result ({why[:300]}).")


def judge_trace(report: dict[str, Any], outcome: SandboxOutcome, configs: list[dict[str, Any]],
                task: Task, seed: int, dense: bool = True) -> tuple[GateResult, list[ConfigTrace]]:
    """The trace gate: the child's records built into :class:`ConfigTrace` s, every one asked for
    (``dense=False``: provisional traces were asked for); a dense trace's programs run in full are
    checked against the reference at the target shape (:mod:`target_outputs`)."""
    n_shapes = len(task.target_shapes)
    blob = BlobReader(outcome.files.get(DATA_FILE))
    try:
        records = report.get("traces")
        if not isinstance(records, list):
            raise MalformedTrace("no trace list")
        traces = [build_config_trace(r, blob, dense) for r in records]
        for t in traces:
            if t.config not in configs or not 0 <= t.shape_index < n_shapes:
                raise MalformedTrace(f"a trace for config {t.config} at shape {t.shape_index} was not asked for")
        error = report.get("error")
        if error is None and len(traces) != n_shapes * len(configs):
            raise MalformedTrace("traces are missing")
    except MalformedTrace as exc:
        return _malformed(outcome, f"trace: {exc}"), []
    seconds = outcome.wall_s
    if error is not None:
        reason = str(error)[:2000]
        # the child's own trace time limit, its address space at the target shapes or its data file (the
        # verifier's limits)
        if reason.partition(": ")[2].startswith((TRACE_TIMEOUT, *OUT_OF_MEMORY, FILE_LIMIT)):
            return GateResult(name="trace", passed=False, reason=f"{INCONCLUSIVE} ({reason})", seconds=seconds,
                              details={"inconclusive": True}), traces
        return GateResult(name="trace", passed=False, reason=reason, seconds=seconds), traces
    details = {"traces": len(traces), "seconds": [round(t.seconds, 3) for t in traces]}
    if dense:
        try:
            wrong, details["target_outputs"] = check_target_outputs(task, seed, records, blob)
        except (KeyError, TypeError, ValueError, IndexError) as exc:   # TargetCheckError, ChannelError
            return _malformed(outcome, f"trace: the target-shape outputs: {type(exc).__name__}: {exc}"), []
        if wrong is not None:
            return GateResult(name="trace", passed=False, reason=wrong, seconds=seconds), traces
    if isinstance(report.get("waves_reused"), int) and report["waves_reused"] > 0:
        details["waves_reused"] = report["waves_reused"]
    return GateResult(name="trace", passed=True, seconds=seconds, details=details), traces


def sandbox_failure(outcome: SandboxOutcome) -> GateResult:
    """The gate a killed or crashed child failed: the stage it last reported, else "sandbox"."""
    gate = outcome.progress if outcome.progress in CHILD_GATES else "sandbox"
    text = outcome.reason
    reason = (f"the candidate's process was {text}" if text.startswith("killed")
              else f"the candidate's process {text}")
    if not outcome.killed_by and outcome.output_tail.strip():
        reason += f"; last output: {outcome.output_tail.strip()[-_TAIL_IN_REASON:]}"
    return GateResult(name=gate, passed=False, reason=reason, seconds=outcome.wall_s,
                      details={"sandbox": outcome.to_dict()})


#: Rounds of dense traces for the picked configs; past them the provisional configs are dropped and the
#: model picks among the dense ones (docs/verifier.md, "Lazy dense traces").
DENSIFY_ROUNDS = 3


def score_and_describe(task: Task, traces: list[ConfigTrace], space: dict[str, list[Any]],
                       hardware: list[str], gates: list[GateResult], *, seed: int,
                       seconds_so_far: float, compile_with: dict[str, Any] | None = None,
                       confirm_with: dict[str, Any] | None = None,
                       densify: Callable[..., tuple[GateResult, list[ConfigTrace]]] | None = None
                       ) -> VerifyResult:
    """The model gate (the performance model and the plausibility checks), the compile gate (the model's
    best configs compiled for each GPU; what does not compile is excluded and the model picks again),
    then the descriptors.  A provisional trace of a config the model picks is replaced by a dense one
    (*densify(configs, ahead)*: the trace gate and the dense traces; *ahead*, the runner-up, may be traced
    beside them for a later round: :mod:`.dense_rounds`) and the model picks again; when the picks
    still move after :data:`DENSIFY_ROUNDS` rounds, among the dense traces only."""
    start = time.perf_counter()

    def done(**kw) -> VerifyResult:
        seconds = round(seconds_so_far + time.perf_counter() - start, 3)
        return VerifyResult(gates=gates, param_space=space, traces=traces, seconds=seconds, **kw)

    def fail(reason: str, gate: str = "model") -> VerifyResult:
        if gate == "model":
            gates.append(GateResult(name="model", passed=False, seconds=time.perf_counter() - start, reason=reason))
        return done(passed=False, gate=gate, reason=reason)

    from .judge.confirm import picked_configs
    from .judge.plausibility import implausible_scores, implausible_traces
    try:
        from ..perfmodel import score_candidate
    except ImportError as exc:
        return fail(f"the performance model is not available ({exc}).")
    trace_gate = next((g for g in gates if g.name == "trace"), None)
    model_s = compile_s = 0.0                      # the model's and the compile gate's seconds over the rounds
    for round_ in range(1, DENSIFY_ROUNDS + 3):
        round_start = time.perf_counter()
        # A provisional trace ran no census, whose correction of edge tiles (and of work the samples missed)
        # only ever scales counts up: its coverage and speed-of-light are judged once it is dense, which
        # happens as soon as the model picks it; a config never picked is never reported.
        why = implausible_traces(task, [t for t in traces if not t.provisional])
        if why:
            return fail(why)
        try:
            score = score_candidate(task, traces, space, hardware, seed=seed)
            if not math.isfinite(float(score.objective)):
                raise ValueError(f"objective is {score.objective}")
        except Exception as exc:  # noqa: BLE001 - the model failing on a trace fails this candidate only
            return fail(f"the performance model could not score this kernel: {type(exc).__name__}: {exc}")
        provisional = {config_key(t.config) for t in traces if t.provisional}
        picked_provisional = densify is not None and any(config_key(c) in provisional for c in picked_configs(score))
        why = implausible_scores(score.hardware)
        if why and not picked_provisional:
            return fail(why)
        model_s += time.perf_counter() - round_start
        model = GateResult(name="model", passed=True, seconds=model_s)
        compiled = None
        if compile_with is not None:
            from .judge.compile_gate import compile_gate
            compiled, score, _ = compile_gate(compile_with["source"], task, traces, space, hardware, score,
                                              seed=seed, top_k=compile_with["top_k"], cache=compile_with["cache"],
                                              budget=compile_with["budget"])
            compile_s += compiled.seconds
            compiled.seconds = compile_s
        todo = [c for c in picked_configs(score) if config_key(c) in provisional]
        if densify is None or not todo or (compiled is not None and not compiled.passed):
            break
        if round_ > DENSIFY_ROUNDS:                # the picks keep moving: the model picks among the dense ones
            traces = [t for t in traces if not t.provisional]
            if trace_gate is not None:
                trace_gate.details["dropped"] = len(provisional)
            if confirm_with is not None:
                confirm_with["traces"] = traces
            continue
        began = time.perf_counter()
        dense_gate, dense = densify(todo, runner_up(score.ranked, hardware, provisional, todo, HINT_PARAMS))
        if trace_gate is not None:
            trace_gate.seconds += time.perf_counter() - began
            trace_gate.details["densified"] = trace_gate.details.get("densified", 0) + len(todo)
        if not dense_gate.passed:
            if trace_gate is not None:
                trace_gate.passed, trace_gate.reason = False, dense_gate.reason
                trace_gate.details.update({k: v for k, v in dense_gate.details.items() if k == "inconclusive"})
            return done(passed=False, gate=dense_gate.name, reason=dense_gate.reason)
        dense_keys = {(t.shape_index, config_key(t.config)) for t in dense}
        traces = _in_config_order([t for t in traces if (t.shape_index, config_key(t.config)) not in dense_keys]
                                  + dense, [t.config for t in traces])
        if confirm_with is not None:
            confirm_with["traces"] = traces
    gates.append(model)
    if compiled is not None:
        gates.append(compiled)
        if not compiled.passed:
            return fail(compiled.reason, gate="compile")
        why = implausible_scores(score.hardware)   # the compile gate re-scored: the cap holds for what is kept
        if why:
            model.passed, model.reason = False, why
            return done(passed=False, gate="model", reason=why)
    model.reason, model.details = str(score.feedback), {"best_configs": list(score.best_configs)}
    if confirm_with is not None:
        from .judge.confirm import confirm_gate
        gate = confirm_gate(score=score, seed=seed, **confirm_with)
        gates.append(gate)
        if not gate.passed:
            return fail(gate.reason, gate=gate.name)
    try:
        descriptors = describe(traces, score.hardware.get(hardware[0]))
    except Exception as exc:  # noqa: BLE001 - a trace the descriptors cannot read fails this candidate only
        model.passed, model.reason = False, (f"the archive descriptors could not be computed: "
                                             f"{type(exc).__name__}: {exc}")
        return done(passed=False, gate="model", reason=model.reason)
    return done(passed=True, gate=None, reason="", descriptors=descriptors, objective=float(score.objective),
                hardware=dict(score.hardware))


def describe(traces: list[ConfigTrace], best) -> dict[str, float] | None:
    """Descriptors of the first hardware's best config at the first target shape."""
    from .judge.descriptors import compute_descriptors
    first_shape = [t for t in traces if t.shape_index == 0] or traces
    if not first_shape:
        return None
    params = dict(first_shape[0].config)
    if best is not None:
        per_shape = best.per_shape[0].get("best_params") if best.per_shape else None
        params = dict(per_shape or best.best_params or params)
    kernel_part = {k: v for k, v in params.items() if k not in HINT_PARAMS}
    trace = next((t for t in first_shape if t.config == kernel_part), first_shape[0])
    return compute_descriptors(trace, params)
