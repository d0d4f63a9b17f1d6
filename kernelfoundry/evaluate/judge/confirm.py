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

A plan of two or more runs goes to two check jobs side by side when two of the child's fork
servers wait idle (by then the check and trace jobs are done, so both CPUs are free): the runs
are shared out by input bytes, each job's runs are judged on their own, and the earliest failing
run in plan order is the one reported, as a single job would have stopped there.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
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
                 run_checks: Callable[[list[dict[str, Any]]], tuple[Any, Any]],
                 side_by_side: Callable[[], int] = lambda: 1) -> GateResult:
    """Check the picked configs where they have not run yet, then that every traced path of a picked config was
    checked; a path that was not is run once more at shapes aligned like the targets' before the
    gate fails.  *run_checks(plan)* runs a sandboxed check job and returns (outcome, check report);
    *side_by_side()* says how many such jobs may run at once now (1 or 2)."""
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

    def judged(part: list[dict[str, Any]], where: str) -> tuple[int, GateResult | list[tuple[dict[str, Any], Any]]]:
        """One job's runs judged: (index in *part* of the run that failed, else len(part); a failed gate or
        the (planned run, record) pairs).  A job that failed outright counts from its first run."""
        outcome, report = run_checks(part)
        if isinstance(outcome, GateResult):                # the job failed outright (killed, load, malformed)
            return 0, (fail(outcome.reason, inconclusive=True) if outcome.details.get("inconclusive")
                       else fail(outcome.reason))
        try:
            verdict = Judge(task, part, seed=seed).judge(report, outcome)
        except MalformedReport as exc:
            return 0, GateResult(name="sandbox", passed=False, seconds=time.perf_counter() - start,
                                 reason=f"the sandboxed checks returned a malformed result ({str(exc)[:300]}).")
        if not verdict.passed:
            at = int(verdict.details.get("failed_run", 0))
            if verdict.details.get("inconclusive"):       # a span run out of its CPU time: the verifier's limit
                return at, fail(verdict.reason, inconclusive=True)
            return at, fail(f"a config the model picked fails {where}: {verdict.reason}")
        return len(part), list(zip(part, report.get("runs", [])))

    def checked(plan: list[dict[str, Any]], where: str) -> GateResult | list[tuple[dict[str, Any], Any]]:
        """The plan's runs judged: a failed gate (the earliest failing run's, in plan order), or the
        (planned run, record) pairs in plan order."""
        parts = split_plan(task, plan, side_by_side() if len(plan) > 1 else 1)
        return judged_in_parts(plan, parts, lambda part: judged(part, where))

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


def judged_in_parts(plan: list[dict[str, Any]], parts: list[list[dict[str, Any]]],
                    judge_part: Callable[[list[dict[str, Any]]], tuple[int, Any]]) -> Any:
    """Judge *plan* split into *parts* (one job each, side by side when there are several).
    *judge_part(part)* returns (index in the part of its failing run, or len(part); a failed
    :class:`GateResult` or the part's (planned run, record) pairs).  The result is what one job over
    the whole plan gives: the failure of the earliest failing run in plan order, else every pair in
    plan order."""
    if len(parts) == 1:
        return judge_part(parts[0])[1]
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        results = list(pool.map(judge_part, parts))
    position = {id(run): i for i, run in enumerate(plan)}
    failures = [(position[id(part[min(at, len(part) - 1)])], result)
                for part, (at, result) in zip(parts, results) if isinstance(result, GateResult)]
    if failures:
        return min(failures, key=lambda f: f[0])[1]
    pairs = [pair for _, result in results for pair in result]
    return sorted(pairs, key=lambda pair: position[id(pair[0])])


def split_plan(task: Any, plan: list[dict[str, Any]], jobs: int) -> list[list[dict[str, Any]]]:
    """*plan* in at most *jobs* parts of about equal input bytes (the interpreter's cost grows with them),
    heaviest runs shared out first (the compile gate's :func:`share_out`); each part keeps the plan's
    order, no part is empty."""
    if jobs < 2 or len(plan) < 2:
        return [plan]
    from ...compiler import share_out
    weight = {str(i): float(task.input_bytes(dict(run["shape"]))) for i, run in enumerate(plan)}
    return [[plan[int(i)] for i in part] for part in share_out(list(weight), weight, jobs)]
