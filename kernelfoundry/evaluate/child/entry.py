"""The verifier's in-sandbox entry point: import the candidate, run it as planned, report raw data.

``python -m kernelfoundry.evaluate.child.entry IN.json OUT.json`` reads a payload, runs
:func:`run_job` and writes the result (to a temp name, then renamed) plus raw arrays
to ``DATA.bin`` (:mod:`channel`).  The child judges nothing: it never sees the
task's reference (the payload's task carries a stub), and comparison, counting,
coverage and scoring happen in the driver (:mod:`correctness`, :mod:`counts`,
:mod:`plausibility`), which never imports candidate code.

payload = {"kind": "check" | "trace", "source": str, "task": task dict (reference stubbed),
"kernel_configs": [{...}, ...] (non-hint params, the first is the default), "hints": {...},
"seed": int, "runs": [planned check runs] (check; trace: the span runs, run first),
"probe_configs": [configs whose grids to probe] (check), "trace_programs": int (trace), "dense": bool
(trace; false: sampled programs run their sparse loop plans only, a provisional trace),
"launch_timeout_s", "trace_timeout_s" (optional)}.

result = {"gates": [the load gate's GateResult dict], "param_space": {...} or None,
"check": {"runs": [...], "failed_run": int | None, "error": str | None, "probes": [...]} (when runs
were asked for), "trace": {"traces": [...], "error": str | None} (trace)}.

``main`` exits 0 with that result; on a malformed payload or a verifier error (never
a candidate's failure) it writes ``{"error": message}`` and exits 1.  Before each
stage the child appends the stage's name to ``$KF_SANDBOX_PROGRESS``, so a sandbox
that has to kill a hung or crashed child can tell which gate it died in.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ...candidate import HINT_PARAMS, default_config
from ...harness.job_main import job_main, loaded_candidate, report_progress  # noqa: F401 - report_progress: re-exported
from ...harness.payload import DEFAULT_TRACE_PROGRAMS


def ensure_interpreter() -> None:
    """Turn on Triton's interpreter before triton is imported (fail clearly if it is too late), its gaps filled."""
    os.environ["TRITON_INTERPRET"] = "1"
    import triton
    if not triton.knobs.runtime.interpret:
        raise RuntimeError("Triton's interpreter is off although TRITON_INTERPRET=1 is set (triton.knobs."
                           "runtime.interpret was overridden); the checks need the interpreter.")
    from .interpreter_gaps import install
    from .interpreter_speed import install as install_speed
    install()
    install_speed()


def _configs(payload: dict[str, Any], space: dict[str, list[Any]]) -> list[dict[str, Any]]:
    kernel_names = [n for n in space if n not in HINT_PARAMS]
    configs = payload.get("kernel_configs") or [{n: space[n][0] for n in kernel_names}]
    for config in configs:
        unknown = set(config) - set(kernel_names)
        missing = set(kernel_names) - set(config)
        if unknown or missing:
            raise ValueError(f"payload kernel_configs entry {config} does not match the kernel params "
                             f"{kernel_names} (unknown {sorted(unknown)}, missing {sorted(missing)})")
    return [dict(c) for c in configs]


def _hints(payload: dict[str, Any], space: dict[str, list[Any]]) -> dict[str, Any]:
    given = payload.get("hints") or {}
    defaults = default_config(space)
    return {n: given.get(n, defaults[n]) for n in HINT_PARAMS if n in space}


def run_job(payload: dict[str, Any], data_path: Path | str) -> dict[str, Any]:
    """Load the candidate, then run the planned checks or traces; see the module docstring."""
    ensure_interpreter()
    kind = payload.get("kind")
    if kind not in ("check", "trace"):
        raise ValueError(f"payload kind must be 'check' or 'trace'; got {kind!r}")
    seed = int(payload.get("seed", 0))
    result: dict[str, Any] = {"gates": [], "param_space": None}
    with loaded_candidate(payload, data_path, result, prefix="kf_child_") as (task, loaded, blob):
        if loaded is None:
            return result
        result["param_space"] = loaded.param_space
        configs = _configs(payload, loaded.param_space)
        hints = _hints(payload, loaded.param_space)
        timeout = payload.get("launch_timeout_s", 30.0)
        if payload.get("runs"):
            from .run_checks import run_checks
            report_progress("correctness")
            result["check"] = run_checks(loaded, task, payload["runs"], seed=seed, hints=hints, blob=blob,
                                         timeout=timeout)
        if kind == "check" and "check" not in result:          # every run was cached: the probes only
            result["check"] = {"runs": [], "failed_run": None, "error": None}
        if kind == "check" and payload.get("probe_configs") and (result.get("check") or {}).get("error") is None:
            from .run_checks import probe_grids
            result["check"]["probes"] = probe_grids(loaded, task, _configs({"kernel_configs": payload[
                "probe_configs"]}, loaded.param_space), hints=hints, timeout=timeout)
        if kind == "trace" and (result.get("check") or {}).get("error") is None:
            report_progress("trace")
            result["trace"] = _trace(loaded, task, configs, hints, seed, payload, blob)
        return result


def _trace(loaded, task, configs, hints, seed, payload, blob) -> dict[str, Any]:
    from ...candidate import config_key
    from .record_trace import TraceFailure, trace_config
    from .wave_reuse import WaveReuse
    traces, reuse = [], WaveReuse()
    for shape_index, env in enumerate(task.target_shapes):
        for config in configs:
            try:
                traces.append(trace_config(loaded.launch, task, shape_index, config, hints, seed=seed,
                                           trace_programs=int(payload.get("trace_programs", DEFAULT_TRACE_PROGRAMS)),
                                           timeout=payload.get("trace_timeout_s", 60.0),
                                           candidate_file=str(loaded.path), blob=blob,
                                           dense=payload.get("dense", True) is not False, wave_reuse=reuse))
            except TraceFailure as exc:
                shape = "{" + ", ".join(f"{k}={v}" for k, v in env.items()) + "}"
                return {"traces": traces, "error": f"shape {shape}, config {config_key(config) or 'default'}: {exc}",
                        "waves_reused": reuse.reused}
    return {"traces": traces, "error": None, "waves_reused": reuse.reused}


def main(argv: list[str] | None = None) -> int:
    """``python -m kernelfoundry.evaluate.child.entry IN.json OUT.json``; 0 on success, 1 on a verifier error."""
    from ...sandbox import DATA_FILE
    return job_main(argv, "kernelfoundry.evaluate.child.entry", lambda p, out: run_job(p, out.with_name(DATA_FILE)),
                    {"gates": [], "param_space": None}, "verifier error")


def preload() -> None:
    """Import what every job needs, once, in the fork server (trusted code only; no candidate runs)."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        from . import run_checks  # noqa: F401
        from . import record_trace  # noqa: F401


def warm_up() -> str | None:
    """Called once by the fork server after :func:`preload`: see :mod:`warmup`."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return None
    from ..warmup import warm_up as run_warm_up
    return run_warm_up(run_job)


if __name__ == "__main__":
    sys.exit(main())
else:
    preload()
