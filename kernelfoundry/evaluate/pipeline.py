"""The verifier pipeline: hack gate -> sandboxed load/correctness/trace -> model -> descriptors.

``verify(task, source, hardware)`` always returns a :class:`VerifyResult`; it
raises only for the caller's own mistakes (unknown hardware names), never for
anything the candidate does.  The candidate runs only inside the sandbox
(:mod:`sandbox`); the driver reads its source statically (:mod:`hack`,
``parse_param_space``) and the child's JSON result, which it validates
before use (a hostile candidate could have forged it).
"""

from __future__ import annotations

import math
import time
from typing import Any

from ..candidate import HINT_PARAMS, ParamSpaceError, kernel_configs, parse_param_space
from ..task import Task
from .hack import hack_gate
from .records import ConfigTrace, GateResult, VerifyResult
from .sandbox import GiB, SandboxLimits, SandboxOutcome, run_sandboxed

CHILD_MODULE = "kernelfoundry.evaluate.child"
CHILD_GATES = ("load", "correctness", "trace")
DEFAULT_TIMEOUT_S = 120.0
_TAIL_IN_REASON = 800


def default_limits(task: Task, timeout_s: float = DEFAULT_TIMEOUT_S) -> SandboxLimits:
    """Sandbox limits for *task*: the address space must hold its target-shape tensors.

    Target-shape inputs and outputs are allocated but only sampled programs
    touch them, so virtual memory is sized as 4 GiB plus three times the
    largest target input set (inputs, outputs, one temporary); real memory is
    held to 4 GB by the RSS watchdog.
    """
    largest = max(task.input_bytes(env) for env in task.target_shapes)
    return SandboxLimits(wall_s=timeout_s, address_space_bytes=max(8 * GiB, 4 * GiB + 3 * largest))


def child_timeouts(wall_s: float) -> dict[str, float]:
    """The child's own per-launch and per-trace limits, inside the sandbox's wall limit,
    so that a hang is reported by the gate it happened in."""
    return {"launch_timeout_s": max(1.0, min(30.0, 0.25 * wall_s)),
            "trace_timeout_s": max(1.0, min(60.0, 0.4 * wall_s))}


def check_hardware(names: list[str]) -> None:
    """Raise HardwareError for unknown names (once the hardware library exists)."""
    try:
        from ..perfmodel.hardware import resolve_hardware
    except ImportError:
        return
    resolve_hardware(names)


def verify(task: Task, source: str, hardware: list[str] | None = None, *, seed: int = 0,
           limits: SandboxLimits | None = None, max_kernel_configs: int = 8, trace_programs: int = 4,
           tune: bool = True, mode: str | None = None) -> VerifyResult:
    """Run every gate on *source* for *task*; see the module docstring.

    *hardware* defaults to the task's list.  *limits* defaults to
    :func:`default_limits`.  ``tune=False`` checks, traces and scores only the
    default config (the first value of every PARAMS entry; an ablation).
    *mode* picks the sandbox mode ("fork"/"spawn").
    """
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
    payload = {"source": source, "task": task.to_dict(),
               "kernel_configs": kernel_configs(space, cap=max(1, max_kernel_configs), seed=seed),
               "hints": {n: space[n][0] for n in HINT_PARAMS if n in space},
               "seed": seed, "do_trace": True, "trace_programs": trace_programs,
               **child_timeouts(limits.wall_s)}
    outcome = run_sandboxed(CHILD_MODULE, payload, limits, mode=mode)
    child_gates, traces, failure = read_child_result(outcome, payload["kernel_configs"], len(task.target_shapes))
    gates += child_gates
    if failure is not None:
        gates.append(failure)
    if not gates[-1].passed:                  # the space is the driver's own static parse, never the child's
        return VerifyResult(passed=False, gate=gates[-1].name, reason=gates[-1].reason, gates=gates,
                            param_space=space, traces=traces, seconds=elapsed())
    return score_and_describe(task, traces, space, hardware, gates, seed=seed,
                              seconds_so_far=time.perf_counter() - start)


def read_child_result(outcome: SandboxOutcome, configs: list[dict[str, Any]], n_shapes: int
                      ) -> tuple[list[GateResult], list[ConfigTrace], GateResult | None]:
    """Validate the child's result against what was asked: (gates, traces, failure gate or None)."""
    result = outcome.result
    if not outcome.ok or result is None:
        return [], [], sandbox_failure(outcome)
    if result.get("error"):
        gate = outcome.progress if outcome.progress in CHILD_GATES else "sandbox"
        return [], [], GateResult(name=gate, passed=False, seconds=outcome.wall_s,
                                        reason=f"the verifier failed inside the sandbox: {str(result['error'])[:500]}")
    try:
        gates = [GateResult.from_dict(g) for g in result["gates"]]
        names = [g.name for g in gates]
        if not gates or names != list(CHILD_GATES[:len(names)]) or any(
                not isinstance(g.passed, bool) or not isinstance(g.reason, str) for g in gates):
            raise ValueError(f"unexpected gates {names}")
        if any(not g.passed for g in gates[:-1]):
            raise ValueError("a gate failed but later gates ran")
        traces = [ConfigTrace.from_dict(t) for t in result.get("traces", [])]
        for t in traces:
            if t.config not in configs or not 0 <= t.shape_index < n_shapes:
                raise ValueError(f"a trace for config {t.config} at shape {t.shape_index} was not asked for")
        if gates[-1].passed and (names[-1] != "trace" or not traces):
            raise ValueError("the gates passed but no trace came back")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return [], [], GateResult(name="sandbox", passed=False, seconds=outcome.wall_s,
                                        reason=f"the sandboxed checks returned a malformed result ({exc}).")
    return gates, traces, None


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


def score_and_describe(task: Task, traces: list[ConfigTrace], space: dict[str, list[Any]],
                       hardware: list[str], gates: list[GateResult], *, seed: int,
                       seconds_so_far: float) -> VerifyResult:
    """The model gate (one call to the performance model), then the archive descriptors."""
    start = time.perf_counter()

    def done(**kw) -> VerifyResult:
        seconds = round(seconds_so_far + time.perf_counter() - start, 3)
        return VerifyResult(gates=gates, param_space=space, traces=traces, seconds=seconds, **kw)

    try:
        from ..perfmodel.score import score_candidate
    except ImportError as exc:
        gate = GateResult(name="model", passed=False, reason=f"the performance model is not available ({exc}).")
        gates.append(gate)
        return done(passed=False, gate="model", reason=gate.reason)
    try:
        score = score_candidate(task, traces, space, hardware, seed=seed)
        objective = float(score.objective)
        if not math.isfinite(objective):
            raise ValueError(f"objective is {objective}")
    except Exception as exc:  # noqa: BLE001 - the model failing on a trace fails this candidate only
        gate = GateResult(name="model", passed=False, seconds=time.perf_counter() - start,
                          reason=f"the performance model could not score this kernel: {type(exc).__name__}: {exc}")
        gates.append(gate)
        return done(passed=False, gate="model", reason=gate.reason)
    from .plausibility import implausible
    why = implausible(task, traces, score.hardware)
    if why:
        gate = GateResult(name="model", passed=False, seconds=time.perf_counter() - start, reason=why)
        gates.append(gate)
        return done(passed=False, gate="model", reason=gate.reason)
    try:
        descriptors = describe(traces, score.hardware.get(hardware[0]))
    except Exception as exc:  # noqa: BLE001 - a trace the descriptors cannot read fails this candidate only
        gate = GateResult(name="model", passed=False, seconds=time.perf_counter() - start,
                          reason=f"the archive descriptors could not be computed: {type(exc).__name__}: {exc}")
        gates.append(gate)
        return done(passed=False, gate="model", reason=gate.reason)
    gates.append(GateResult(name="model", passed=True, reason=str(score.feedback),
                            seconds=time.perf_counter() - start,
                            details={"best_configs": list(score.best_configs)}))
    return done(passed=True, gate=None, reason="", descriptors=descriptors, objective=objective,
                hardware=dict(score.hardware))


def describe(traces: list[ConfigTrace], best) -> dict[str, float] | None:
    """Descriptors of the first hardware's best config at the first target shape."""
    from .descriptors import compute_descriptors
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
