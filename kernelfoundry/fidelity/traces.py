"""Traces of a dataset's kernels: the verifier's, cached on disk while fresh.

A kernel row is predicted from the trace the verifier records at the row's shape
(``kernelfoundry.evaluate.pipeline.verify``: every gate runs, so a dataset kernel that no longer
passes fails loudly).  Tracing a kernel takes seconds, so the traces are kept in
``<dataset dir>/traces/<task stem>.json`` together with a key: the SHA-256 of the task file,
the kernel file, the tracer's sources and the Triton version.  A cache whose key differs is
stale and is rebuilt (``python -m kernelfoundry.fidelity DATASET --refresh-traces`` rebuilds
every one).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from .. import PACKAGE_DIR
from ..records import ConfigTrace
from .dataset import FidelityError

#: Sources whose changes can change a trace.
TRACER_SOURCES = ("evaluate/child/record_trace.py", "evaluate/child/trace_hooks.py", "evaluate/trace/counts.py",
                  "evaluate/child/loop_hooks.py", "evaluate/trace/loop_plan.py", "records.py", "evaluate/child/entry.py", "harness/inputs.py",
                  "harness/tiled.py", "evaluate/child/interpreter_gaps.py", "evaluate/child/libdevice.py",
                  "evaluate/child/aperiodic.py", "harness/aperiodic_hash.py", "evaluate/child/ticket_desk.py",
                  "evaluate/child/interpreter_speed.py", "evaluate/child/loop_limit.py",
                  "evaluate/child/active_session.py", "evaluate/child/wave_reuse.py")


def trace_key(task_path: Path, kernel_path: Path) -> str:
    """The freshness key of one (task, kernel) pair's traces."""
    import triton
    h = hashlib.sha256()
    for p in [task_path, kernel_path] + [PACKAGE_DIR / s for s in TRACER_SOURCES]:
        h.update(p.name.encode())
        h.update(p.read_bytes() if p.is_file() else b"(missing)")
    h.update(triton.__version__.encode())
    return h.hexdigest()


def cache_path(dataset_dir: Path, task_path: Path) -> Path:
    return dataset_dir / "traces" / f"{task_path.stem}.json"


def load_cached(dataset_dir: Path, task_path: Path, kernel_path: Path) -> list[ConfigTrace] | None:
    """Cached traces when the cache exists and its key is current, else None."""
    path = cache_path(dataset_dir, task_path)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.get("key") != trace_key(task_path, kernel_path):
        return None
    return [ConfigTrace.from_dict(t) for t in data["traces"]]


#: Kernel configs the verifier traces per dataset kernel (an autotuned row needs every config of its list).
MAX_CONFIGS = 16


def trace_kernel(task_path: Path, kernel_path: Path, hardware: str) -> list[ConfigTrace]:
    """Run the verifier on the kernel and return its traces at every target shape.

    Every config is traced densely (``dense_traces``): an autotuned row's prediction is the minimum
    over its configs, so none may keep a provisional (sparse) count.  The sandbox's CPU budget grows
    with the (config, shape) pairs to trace.
    """
    from ..candidate import kernel_configs, parse_param_space
    from ..evaluate import default_limits, verify
    from ..task import load_task
    task = load_task(task_path, check_files=False)
    source = kernel_path.read_text()
    pairs = len(kernel_configs(parse_param_space(source), cap=MAX_CONFIGS)) * len(task.target_shapes)
    base = default_limits(task)
    scale = max(1.0, pairs / 8)
    limits = dataclasses.replace(base, cpu_s=base.cpu_s * scale, wall_s=base.wall_s * scale)
    result = verify(task, source, [hardware], max_kernel_configs=MAX_CONFIGS, compile=False, limits=limits,
                    dense_traces=True)
    if not result.passed:
        raise FidelityError(f"dataset kernel {kernel_path} fails the verifier on {task_path} at gate "
                            f"'{result.gate}': {result.reason}")
    return list(result.traces)


def get_traces(dataset_dir: Path, task_path: Path, kernel_path: Path, hardware: str, *,
               refresh: bool = False, write: bool = True) -> tuple[list[ConfigTrace], bool]:
    """(traces, from_cache) for one (task, kernel); re-traces and rewrites a stale or missing cache."""
    if not refresh:
        cached = load_cached(dataset_dir, task_path, kernel_path)
        if cached is not None:
            return cached, True
    traces = trace_kernel(task_path, kernel_path, hardware)
    if write:
        path = cache_path(dataset_dir, task_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"key": trace_key(task_path, kernel_path), "task": task_path.name,
                                    "kernel": kernel_path.name, "traces": [t.to_dict() for t in traces]}))
    return traces, False
