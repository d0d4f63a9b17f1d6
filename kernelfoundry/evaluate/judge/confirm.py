"""The confirm gate: the configs the model picked are checked where it matters before they are reported.

The check job runs every kernel config at the check shapes, but the span shapes
(rows spanning several blocks, many programs: :mod:`span_shape`) only for the
default config.  Once the model (and the compile gate) have picked the best config
per hardware and target shape, every picked kernel config not checked there yet
runs at its span and grid-span shapes in one more sandboxed check job, judged like
the others.  Then every launch the trace recorded for a picked config at a target
shape must have been executed by some correctness run of that config, down to its
code-path switches (0/1 constexprs: :func:`correctness.unchecked_paths`): a path
taken only at the target shape is unchecked and fails the gate.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ...candidate import HINT_PARAMS, config_key
from .correctness import Judge, MalformedReport, plan_span_runs, unchecked_paths
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


def confirm_gate(task: Any, traces: list[ConfigTrace], score: Any, *, probes: Any, spanned: list[dict[str, Any]],
                 records: list[tuple[dict[str, Any], Any]], seed: int, first_call: int,
                 run_checks: Callable[[list[dict[str, Any]]], tuple[Any, Any]]) -> GateResult:
    """Check the picked configs not spanned yet, then that every traced path of a picked config was
    checked.  *run_checks(plan)* runs a sandboxed check job and returns (outcome, check report)."""
    start = time.perf_counter()
    picked = picked_configs(score)
    done = {config_key(c) for c in spanned}
    missing = [c for c in picked if config_key(c) not in done]
    plan = plan_span_runs(task, probes, missing, seed=seed, first_call=first_call) if missing else []
    details: dict[str, Any] = {"picked": [config_key(c) or "default" for c in picked],
                               "span_runs": len(plan), "span_shapes": [r["shape"] for r in plan]}
    if plan:
        outcome, report = run_checks(plan)
        if isinstance(outcome, GateResult):                # the job failed outright (killed, load, malformed)
            return GateResult(name="confirm", passed=False, reason=outcome.reason,
                              seconds=time.perf_counter() - start, details=details)
        try:
            verdict = Judge(task, plan, seed=seed).judge(report, outcome)
        except MalformedReport as exc:
            return GateResult(name="sandbox", passed=False, seconds=time.perf_counter() - start,
                              reason=f"the sandboxed checks returned a malformed result ({str(exc)[:300]}).")
        if not verdict.passed:
            if verdict.details.get("inconclusive"):       # a span run out of its CPU time: the verifier's limit
                return GateResult(name="confirm", passed=False, seconds=time.perf_counter() - start,
                                  reason=verdict.reason, details={**details, "inconclusive": True})
            return GateResult(name="confirm", passed=False, seconds=time.perf_counter() - start,
                              reason=f"a config the model picked fails where rows span several blocks: {verdict.reason}",
                              details=details)
        records = records + list(zip(plan, report.get("runs", [])))
    why = unchecked_paths(traces, records, picked)
    if why:
        return GateResult(name="confirm", passed=False, reason=why, seconds=time.perf_counter() - start,
                          details=details)
    return GateResult(name="confirm", passed=True, seconds=time.perf_counter() - start, details=details)
