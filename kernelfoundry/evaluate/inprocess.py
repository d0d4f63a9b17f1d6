"""The verifier's two jobs run in this process, on TRUSTED kernels only (tests, datasets, benchmarks).

:func:`check_trusted` and :func:`trace_trusted` do what the sandboxed child and the
judge do in :func:`pipeline.verify`, without the sandbox: they import the kernel into
this process.  Never call them on generated code.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ..candidate import HINT_PARAMS, ParamSpaceError, parse_param_space
from ..task import Task
from ..sandbox import DATA_FILE, BlobReader
from .judge.correctness import Judge, plan_runs
from ..harness.payload import DEFAULT_TRACE_PROGRAMS, child_task
from ..records import ConfigTrace, GateResult
from .trace.counts import build_config_trace


def _payload(source: str, task: Task, configs: list[dict[str, Any]] | None, hints: dict[str, Any] | None,
             seed: int) -> dict[str, Any]:
    try:
        space = parse_param_space(source)
    except ParamSpaceError:                  # the child's load gate reports it
        space = {}
    configs = configs or [{n: v[0] for n, v in space.items() if n not in HINT_PARAMS}]
    hints = hints if hints is not None else {n: space[n][0] for n in HINT_PARAMS if n in space}
    return {"source": source, "task": child_task(task.to_dict()), "kernel_configs": configs, "hints": hints,
            "seed": seed}


def _run(payload: dict[str, Any]) -> tuple[dict[str, Any], BlobReader]:
    from .child.entry import ensure_interpreter, run_job
    ensure_interpreter()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / DATA_FILE
        result = run_job(payload, data)
        return result, BlobReader(data.read_bytes() if data.exists() else b"")


def check_trusted(source: str, task: Task, configs: list[dict[str, Any]] | None = None, *,
                  hints: dict[str, Any] | None = None, seed: int = 0, profiles: tuple[str, ...] | None = None,
                  launch_timeout_s: float = 30.0) -> GateResult:
    """The load and correctness gates on a trusted kernel (check shapes only; no span runs): the
    load gate when it fails, else the correctness gate."""
    payload = _payload(source, task, configs, hints, seed)
    plan = plan_runs(task, payload["kernel_configs"], seed=seed, profiles=profiles)
    result, blob = _run({**payload, "kind": "check", "runs": plan, "launch_timeout_s": launch_timeout_s})
    load = GateResult.from_dict(result["gates"][0])
    if not load.passed:
        return load
    return Judge(task, plan, seed=seed).judge(result["check"], blob)


def trace_trusted(source: str, task: Task, configs: list[dict[str, Any]] | None = None, *,
                  hints: dict[str, Any] | None = None, seed: int = 0,
                  trace_programs: int = DEFAULT_TRACE_PROGRAMS, timeout: float = 60.0
                  ) -> tuple[GateResult, list[ConfigTrace]]:
    """The trace gate on a trusted kernel: (gate, traces built by the judge's counting)."""
    payload = {**_payload(source, task, configs, hints, seed), "kind": "trace", "trace_programs": trace_programs,
               "trace_timeout_s": timeout}
    result, blob = _run(payload)
    load = GateResult.from_dict(result["gates"][0])
    if not load.passed:
        return GateResult(name="trace", passed=False, reason=load.reason), []
    report = result["trace"]
    traces = [build_config_trace(r, blob) for r in report["traces"]]
    if report["error"]:
        return GateResult(name="trace", passed=False, reason=report["error"]), traces
    return GateResult(name="trace", passed=True, details={"traces": len(traces)}), traces
