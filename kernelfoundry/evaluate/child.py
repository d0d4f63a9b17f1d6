"""The verifier's in-sandbox entry point: load, correctness and trace gates for one candidate.

``python -m kernelfoundry.evaluate.child IN.json OUT.json`` reads a payload,
runs :func:`run_checks` and writes the result (to a temp name, then renamed).
:func:`run_checks` is a pure function of the payload, usable in-process by tests;
the pipeline only ever runs it inside the sandbox, because it imports and runs
the candidate.

payload = {"source": str, "task": Task.to_dict(), "kernel_configs": [{...}, ...]
(non-hint params, the first is the default; default: the PARAMS defaults),
"hints": {"num_warps": v, "num_stages": v} (default: the PARAMS defaults),
"seed": int, "do_trace": bool, "trace_programs": int (default 4),
"profiles": [names] (optional), "launch_timeout_s", "trace_timeout_s" (optional)}.

result = {"gates": [GateResult dicts: load, correctness, trace; stopping at the first
failure], "traces": [ConfigTrace dicts, target shape-major, config-minor],
"param_space": {name: [values]} or None}.

``main`` exits 0 with that result; on a malformed payload or a verifier error (never
a candidate's failure, which is a failed gate) it writes ``{"error": message, ...}``
and exits 1.  Before each gate the child appends the gate's name as a line to the file named by
``$KF_SANDBOX_PROGRESS`` (when set), so a sandbox that has to kill a hung or
crashed child can tell which gate it died in.
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

DEFAULT_TRACE_PROGRAMS = 4


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


def run_checks(payload: dict[str, Any]) -> dict[str, Any]:
    """Run the load, correctness and (if ``do_trace``) trace gates; see the module docstring."""
    ensure_interpreter()
    from ..task import task_from_dict
    from .correctness import check_correctness
    from .inputs import PROFILES
    from .loader import check_load
    from .trace import trace_candidate

    task = task_from_dict(payload["task"])
    seed = int(payload.get("seed", 0))
    result: dict[str, Any] = {"gates": [], "traces": [], "param_space": None}
    directory = Path(tempfile.mkdtemp(prefix="kf_child_"))
    loaded = []
    try:
        report_progress("load")
        gate, cand = check_load(payload["source"], task, directory)
        result["gates"].append(gate.to_dict())
        if cand is None:
            return result
        loaded.append(cand)
        result["param_space"] = cand.param_space
        configs = _configs(payload, cand.param_space)
        hints = _hints(payload, cand.param_space)
        profiles = tuple(payload.get("profiles") or PROFILES)
        if set(profiles) - set(PROFILES):
            raise ValueError(f"payload profiles {sorted(set(profiles) - set(PROFILES))} are unknown; "
                             f"known: {', '.join(PROFILES)}")
        report_progress("correctness")
        gate = check_correctness(cand, task, kernel_configs=configs, hints=hints, seed=seed, profiles=profiles,
                                 timeout=payload.get("launch_timeout_s", 30.0))
        result["gates"].append(gate.to_dict())
        if not gate.passed or not payload.get("do_trace", True):
            return result
        report_progress("trace")
        gate, traces = trace_candidate(payload["source"], task, directory, kernel_configs=configs,
                                       hints=hints, seed=seed,
                                       trace_programs=int(payload.get("trace_programs", DEFAULT_TRACE_PROGRAMS)),
                                       timeout=payload.get("trace_timeout_s", 60.0))
        result["gates"].append(gate.to_dict())
        result["traces"] = [t.to_dict() for t in traces]
        return result
    finally:
        for cand in loaded:
            cand.unload()
        shutil.rmtree(directory, ignore_errors=True)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    """``python -m kernelfoundry.evaluate.child IN.json OUT.json``; 0 on success, 1 on a verifier error."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m kernelfoundry.evaluate.child IN.json OUT.json", file=sys.stderr)
        return 2
    in_path, out_path = Path(args[0]), Path(args[1])
    try:
        payload = json.loads(in_path.read_text())
        result = run_checks(payload)
    except Exception as exc:   # a bad payload or a verifier bug, not a candidate failure
        _write_json(out_path, {"gates": [], "traces": [], "param_space": None,
                               "error": f"{type(exc).__name__}: {exc}"})
        print(f"verifier error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    _write_json(out_path, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
