"""``bench_elites.py``: the standalone check-and-time script every export writes beside its kernels.

The script (``bench_template.py``) carries its spec as JSON: the task's reference, its inputs at
each check and target shape (concrete sizes, integer bounds), the tolerance, and per kernel and
target shape the parameters the model tuned with its predicted latency, bound and launch part, and
the eager prediction under do_bench timing.  It needs only torch, triton and the kernel files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..calibrate import CSV_COLUMNS
from ..task import Task

BENCH_SCRIPT = "bench_elites.py"
TEMPLATE = Path(__file__).with_name("bench_template.py")


def _shapes(task: Task, envs: list[dict[str, int]], prefix: str) -> list[dict[str, Any]]:
    return [{"name": f"{prefix}{i}", "env": dict(env), "inputs": [list(s.concrete_shape(env)) for s in task.inputs]}
            for i, env in enumerate(envs)]


def bench_spec(task: Task, hardware: str, kernels: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The script's spec: *kernels* are (file name, the elite's stored per-hardware scores)."""
    from ..fidelity import op_kind
    from ..perfmodel import DO_BENCH, eager_estimate, load_hardware, profile_reference
    spec = load_hardware(hardware)
    shapes = {"check": _shapes(task, task.check_shapes, "check"), "target": _shapes(task, task.target_shapes, "target")}
    inputs = []
    for s in task.inputs:
        bounds = {sh["name"]: [s.bound(s.low, sh["env"]), s.bound(s.high, sh["env"])]
                  for sh in shapes["check"] + shapes["target"]} if not s.is_float and s.dtype != "bool" else {}
        inputs.append({"name": s.name, "dtype": s.dtype, "bounds": bounds})
    entries = []
    for file, scores in kernels:
        score = scores[hardware]
        predicted = {}
        for i, per in enumerate(score.get("per_shape") or []):
            if per.get("latency_s") is None:
                continue
            launch = float((per.get("breakdown") or {}).get("launch", 0.0))
            predicted[f"target{i}"] = {"params": per.get("best_params"), "predicted_s": per["latency_s"],
                                       "bound": per.get("bound") or "", "launch_s": launch,
                                       "launches": max(1, round(launch / (spec.launch_overhead_us * 1e-6)))}
        entries.append({"file": file, "default_params": score.get("best_params") or {}, "predicted": predicted})
    eager = {sh["name"]: eager_estimate(profile_reference(task, sh["env"]), spec, DO_BENCH).seconds
             for sh in shapes["target"]}
    return {"task": task.name, "hardware": hardware, "kind": op_kind(task), "reference": task.reference,
            "inputs": inputs, "shapes": shapes, "atol": task.atol, "rtol": task.rtol, "kernels": entries,
            "eager_predicted_s": eager}


def render_bench(spec: dict[str, Any]) -> str:
    """The script's text with *spec* embedded (as JSON in a raw string: quotes escaped for JSON to undo)."""
    text = json.dumps(spec).replace("'", "\\u0027")
    return TEMPLATE.read_text(encoding="utf-8").replace("__SPEC__", text).replace("__COLUMNS__",
                                                                                  repr(list(CSV_COLUMNS)))
