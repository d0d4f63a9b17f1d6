"""The confirm gate: the configs the model picked are checked where it matters before they are reported.

The check job runs every kernel config at the smallest check shape, the default
config at every check shape.  Once the model (and the compile gate) have picked the
best config per hardware and target shape, every picked kernel config runs at the
check shapes it has not run at yet and at its span and grid-span shapes (rows
spanning several blocks, many programs: :mod:`span_shape`) in one more sandboxed
check job, judged like the others: a config is reported only after every check a
default config gets, and a config never picked costs one run.  Then every launch the trace recorded for a picked config at a target
shape must have been executed by some correctness run of that config, down to its
code-path switches (0/1 constexprs: :func:`correctness.unchecked_paths`).  A path not
checked yet runs once more at a shape aligned like the target's (each size a multiple of
the target's power-of-two factor: :func:`span_shape.aligned_shape`), where switches that
test divisibility (``EVEN_K``) take the target's value; a path still unchecked after that
fails the gate.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ...candidate import HINT_PARAMS, config_key
from .correctness import Judge, MalformedReport, plan_aligned_runs, plan_picked_runs, plan_span_runs, unchecked_paths
from ...records import ConfigTrace, GateResult


def picked_configs(score: Any) -> list[dict[str, Any]]:
    """The distinct kernel configs (hints left out) the model reports: per hardware and per shape."""
    out: dict[str, dict[str, Any]] = {}
    for hw in score.hardware.values():
        for params in [hw.best_params, *(s.get("best_params") for s in hw.per_shape)]:
            if params:
                kernel = {k: v for k, v in params.items() if k not in HINT_PARAMS}
                out.setdefault(config_key(kernel), kernel)
    return list(out.values())


def confirm_gate(task: Any, traces: list[ConfigTrace], score: Any, *, probes: Any,
                 records: list[tuple[dict[str, Any], Any]], seed: int, first_call: int,
                 run_checks: Callable[[list[dict[str, Any]]], tuple[Any, Any]]) -> GateResult:
    """Check the picked configs where they have not run yet, then that every traced path of a picked config was
    checked; a path that was not is run once more at shapes aligned like the targets' before the
    gate fails.  *run_checks(plan)* runs a sandboxed check job and returns (outcome, check report)."""
    start = time.perf_counter()
    picked = picked_configs(score)
    plan = plan_picked_runs(task, picked, [p for p, _ in records], seed=seed, first_call=first_call)
    check_runs = len(plan)
    plan += plan_span_runs(task, probes, picked, seed=seed, first_call=first_call + len(plan))
    details: dict[str, Any] = {"picked": [config_key(c) or "default" for c in picked], "check_runs": check_runs,
                               "span_runs": len(plan) - check_runs,
                               "span_shapes": [r["shape"] for r in plan[check_runs:]]}

    def fail(reason: str, **extra: Any) -> GateResult:
        return GateResult(name="confirm", passed=False, reason=reason, seconds=time.perf_counter() - start,
                          details={**details, **extra})

    def checked(plan: list[dict[str, Any]], where: str) -> GateResult | list[tuple[dict[str, Any], Any]]:
        """The plan's runs judged: a failed gate, or the (planned run, record) pairs."""
        outcome, report = run_checks(plan)
        if isinstance(outcome, GateResult):                # the job failed outright (killed, load, malformed)
            return fail(outcome.reason, inconclusive=True) if outcome.details.get("inconclusive") \
                else fail(outcome.reason)
        try:
            verdict = Judge(task, plan, seed=seed).judge(report, outcome)
        except MalformedReport as exc:
            return GateResult(name="sandbox", passed=False, seconds=time.perf_counter() - start,
                              reason=f"the sandboxed checks returned a malformed result ({str(exc)[:300]}).")
        if not verdict.passed:
            if verdict.details.get("inconclusive"):       # a span run out of its CPU time: the verifier's limit
                return fail(verdict.reason, inconclusive=True)
            return fail(f"a config the model picked fails {where}: {verdict.reason}")
        return list(zip(plan, report.get("runs", [])))

    if plan:
        result = checked(plan, "where it had not run yet (larger check shapes, rows spanning several blocks)")
        if isinstance(result, GateResult):
            return result
        records = records + result
    why = unchecked_paths(traces, records, picked)
    if why:
        targets = [dict(s) for s in {config_key(t.shape): t.shape for t in traces}.values()]
        aligned = plan_aligned_runs(task, targets, picked, seed=seed, first_call=first_call + len(plan))
        details["aligned_shapes"] = [r["shape"] for r in aligned]
        if aligned:
            result = checked(aligned, "at a shape aligned like the target's")
            if isinstance(result, GateResult):
                return result
            why = unchecked_paths(traces, records + result, picked)
    if why:
        return fail(why)
    return GateResult(name="confirm", passed=True, seconds=time.perf_counter() - start, details=details)
