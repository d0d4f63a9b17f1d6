"""The first trace of a candidate's configs in one or two sandboxed jobs beside the check job.

The check job is short next to the trace job (softmax's seed: 0.7 s against 2.3 s of trace),
so once it is done one CPU waits while the trace job goes on alone.  With two configs or more
to trace and a third fork server of the child waiting idle, the configs are shared out over two
trace jobs (alternately, in the order given): check, trace and trace run on two CPUs together.
Each config's trace is seeded by its own key and each job traces shape by shape, as one job
would, so the traces are the same; each job is judged on its own and the judgements merged as one
job's would be: every trace in shape-major, config order, or the failure of the first (shape,
config) that failed in that order.  With fewer idle servers one job runs and a third server
starts in the background for the next verify (a job that starts its own pays seconds of imports).
"""

from __future__ import annotations

import ast
from typing import Any

from ..candidate import config_key
from ..records import ConfigTrace, GateResult
from ..sandbox import default_mode, idle_fork_servers, prestart_fork_servers

#: Fork servers a split needs idle at once: the check job's and the two trace jobs'.
SERVERS_FOR_TWO = 3


def jit_kernels(source: str) -> int:
    """How many ``@triton.jit`` functions *source* defines (0 when it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return 0
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
               and any("jit" in ast.unparse(d) for d in node.decorator_list))


def trace_job_count(module: str, configs: int, mode: str | None, shares_waves: bool = False) -> int:
    """How many trace jobs to run now: 2 when there are two configs or more and three of *module*'s
    fork servers wait idle, else 1 (and a third server is started in the background for next time).
    *shares_waves*: provisional traces of a candidate with several kernels, whose configs share the
    waves of the launches they do not change (``child/wave_reuse.py``) within one job: one job (two
    recomputed those waves, and KernelBench's level-2 chains verified about a second slower)."""
    if configs < 2 or shares_waves or (mode or default_mode()) != "fork":
        return 1
    if idle_fork_servers(module) >= SERVERS_FOR_TWO:
        return 2
    prestart_fork_servers(module, None, SERVERS_FOR_TWO)
    return 1


def split_configs(configs: list[dict[str, Any]], jobs: int) -> list[list[dict[str, Any]]]:
    """*configs* dealt out alternately over at most *jobs* parts (no empty part), each in the given order."""
    jobs = max(1, min(jobs, len(configs)))
    return [configs[i::jobs] for i in range(jobs)]


def merge_judgements(configs: list[dict[str, Any]], n_shapes: int,
                     judged: list[tuple[list[dict[str, Any]], GateResult, list[ConfigTrace], int | None]]
                     ) -> tuple[GateResult, list[ConfigTrace]]:
    """One trace gate from the parts' ``(configs, gate, traces, failed_at)``: *failed_at* is the index, in
    the part's own shape-major order, of the (shape, config) its child stopped at (None when the
    child did not stop: a failure there is the judge's, counted from the part's first trace).  A
    failure: the one whose (shape, config) comes first in the whole order.  Else the passing gates
    merged (traces and seconds in order, counts added, the slowest job's seconds)."""
    position = {config_key(c): i for i, c in enumerate(configs)}

    def where(part: list[dict[str, Any]], index: int) -> int:
        shape, k = divmod(index, len(part))
        return shape * len(configs) + position[config_key(part[k])]

    failures = [(where(part, at or 0), gate, traces) for part, gate, traces, at in judged if not gate.passed]
    if failures:
        _, gate, traces = min(failures, key=lambda f: f[0])
        return gate, traces
    traces = sorted((t for _, _, part_traces, _ in judged for t in part_traces),
                    key=lambda t: (t.shape_index, position.get(config_key(t.config), len(configs))))
    gates = [gate for _, gate, _, _ in judged]
    details: dict[str, Any] = {"traces": len(traces), "seconds": [round(t.seconds, 3) for t in traces],
                               "jobs": len(gates)}
    for gate in gates:
        _add_counts(details, {k: v for k, v in gate.details.items() if k not in ("traces", "seconds")})
    return GateResult(name="trace", passed=True, seconds=max(g.seconds for g in gates), details=details), traces


def _add_counts(into: dict[str, Any], more: dict[str, Any]) -> None:
    """Add *more*'s counts into *into*: numbers summed, dicts merged the same way, anything else kept
    from the first part that had it."""
    for key, value in more.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value
        elif isinstance(value, dict):
            _add_counts(into.setdefault(key, {}), value)
        else:
            into.setdefault(key, value)


def stopped_at(report: dict[str, Any]) -> int | None:
    """Where the child stopped in its job's order: the count of traces it finished before its error."""
    if report.get("error") is None or not isinstance(report.get("traces"), list):
        return None
    return len(report["traces"])
