"""The verifier's in-sandbox entry point: import the candidate, run it as planned, report raw data.

``python -m kernelfoundry.evaluate.child IN.json OUT.json`` reads a payload, runs
:func:`run_job` and writes the result (to a temp name, then renamed) plus raw arrays
to ``DATA.bin`` (:mod:`channel`).  The child judges nothing: it never sees the
task's reference (the payload's task carries a stub), and comparison, counting,
coverage and scoring happen in the driver (:mod:`correctness`, :mod:`trace_counts`,
:mod:`plausibility`), which never imports candidate code.

payload = {"kind": "check" | "trace", "source": str, "task": task dict (reference stubbed),
"kernel_configs": [{...}, ...] (non-hint params, the first is the default), "hints": {...},
"seed": int, "runs": [planned check runs] (check; trace: the span runs, run first),
"probe_configs": [configs whose grids to probe] (check), "trace_programs": int (trace),
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

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..candidate import HINT_PARAMS, default_config
from ..safe_io import write_json_atomic
from .job import DEFAULT_TRACE_PROGRAMS, REFERENCE_STUB



def ensure_interpreter() -> None:
    """Turn on Triton's interpreter before triton is imported; fail clearly if it is too late."""
    os.environ["TRITON_INTERPRET"] = "1"
    import triton
    if not triton.knobs.runtime.interpret:
        raise RuntimeError("Triton's interpreter is off although TRITON_INTERPRET=1 is set (triton.knobs."
                           "runtime.interpret was overridden); the checks need the interpreter.")


def report_progress(stage: str) -> None:
    """Append *stage* to ``$KF_SANDBOX_PROGRESS`` (if set) before a gate starts."""
    path = os.environ.get("KF_SANDBOX_PROGRESS")
    if path:
        with open(path, "a") as f:
            f.write(stage + "\n")


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
    from ..task import task_from_dict
    from .channel import BlobWriter
    from .loader import check_load

    task = task_from_dict(payload["task"], check_files=False)
    if task.reference != REFERENCE_STUB:
        raise ValueError("the child's task must carry the reference stub, not the reference")
    kind = payload.get("kind")
    if kind not in ("check", "trace"):
        raise ValueError(f"payload kind must be 'check' or 'trace'; got {kind!r}")
    seed = int(payload.get("seed", 0))
    result: dict[str, Any] = {"gates": [], "param_space": None}
    directory = Path(tempfile.mkdtemp(prefix="kf_child_"))
    blob = BlobWriter(data_path)
    loaded = None
    try:
        report_progress("load")
        gate, loaded = check_load(payload["source"], task, directory)
        result["gates"].append(gate.to_dict())
        if loaded is None:
            return result
        result["param_space"] = loaded.param_space
        configs = _configs(payload, loaded.param_space)
        hints = _hints(payload, loaded.param_space)
        timeout = payload.get("launch_timeout_s", 30.0)
        if payload.get("runs"):
            from .child_check import run_checks
            report_progress("correctness")
            result["check"] = run_checks(loaded, task, payload["runs"], seed=seed, hints=hints, blob=blob,
                                         timeout=timeout)
        if kind == "check" and payload.get("probe_configs") and (result.get("check") or {}).get("error") is None:
            from .child_check import probe_grids
            result["check"]["probes"] = probe_grids(loaded, task, _configs({"kernel_configs": payload[
                "probe_configs"]}, loaded.param_space), hints=hints, timeout=timeout)
        if kind == "trace" and (result.get("check") or {}).get("error") is None:
            report_progress("trace")
            result["trace"] = _trace(loaded, task, configs, hints, seed, payload, blob)
        return result
    finally:
        blob.close()
        if loaded is not None:
            loaded.unload()
        shutil.rmtree(directory, ignore_errors=True)


def _trace(loaded, task, configs, hints, seed, payload, blob) -> dict[str, Any]:
    from ..candidate import config_key
    from .child_trace import TraceFailure, trace_config
    traces = []
    for shape_index, env in enumerate(task.target_shapes):
        for config in configs:
            try:
                traces.append(trace_config(loaded.launch, task, shape_index, config, hints, seed=seed,
                                           trace_programs=int(payload.get("trace_programs", DEFAULT_TRACE_PROGRAMS)),
                                           timeout=payload.get("trace_timeout_s", 60.0),
                                           candidate_file=str(loaded.path), blob=blob))
            except TraceFailure as exc:
                shape = "{" + ", ".join(f"{k}={v}" for k, v in env.items()) + "}"
                return {"traces": traces, "error": f"shape {shape}, config {config_key(config) or 'default'}: {exc}"}
    return {"traces": traces, "error": None}





def main(argv: list[str] | None = None) -> int:
    """``python -m kernelfoundry.evaluate.child IN.json OUT.json``; 0 on success, 1 on a verifier error."""
    from .channel import DATA_FILE
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m kernelfoundry.evaluate.child IN.json OUT.json", file=sys.stderr)
        return 2
    in_path, out_path = Path(args[0]), Path(args[1])
    try:
        payload = json.loads(in_path.read_text())
        result = run_job(payload, out_path.with_name(DATA_FILE))
    except Exception as exc:   # a bad payload or a verifier bug, not a candidate failure
        write_json_atomic(out_path, {"gates": [], "param_space": None, "error": f"{type(exc).__name__}: {exc}"})
        print(f"verifier error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    write_json_atomic(out_path, result)
    return 0


def preload() -> None:
    """Import what every job needs, once, in the fork server (trusted code only; no candidate runs)."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        from . import child_check, child_trace  # noqa: F401


def warm_up() -> str | None:
    """Called once by the fork server after :func:`preload`: see :mod:`warmup`."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return None
    from .warmup import warm_up as run_warm_up
    return run_warm_up()


if __name__ == "__main__":
    sys.exit(main())
else:
    preload()
