"""The trace gate: run ``launch`` at each target shape with sampled programs and sampled loops.

For each target shape x kernel config, inputs are untouched ``torch.empty``
buffers (see :func:`inputs.empty_inputs`) and the candidate is imported with its
kernel loops rewritten for sampling (:mod:`trace_loops`).  Each kernel launch made
by ``launch`` runs only a few program ids (first, last, seeded-random ones) with
counting hooks, then a cheap *wave pass* over the first programs in launch order
that records each program's first-accessed sector per input tensor, aborting each
program once it has touched every input.  One :class:`LaunchTrace` per launch;
one :class:`ConfigTrace` per (shape, config).  See ``docs/trace.md``.
"""

from __future__ import annotations

import random
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..candidate import config_key
from ..task import Task
from .inputs import empty_inputs
from .loader import CandidateTimeout, describe_exception, import_candidate, time_limit
from .records import ConfigTrace, GateResult, LaunchTrace
from .trace_counts import ProgramCounts, build_launch_trace, sample_programs, wave_widths
from .trace_hooks import SECTOR_BYTES, LaunchContext, Session, active
from .trace_loops import HELPER_NAME, STATE as LOOP_STATE, rewrite_loops, sampled_loop

#: The wave pass covers the first this-many programs in launch order.
WAVE_PROGRAMS = 256


class TraceFailure(Exception):
    """Tracing one (shape, config) failed; the message is the reason."""


class _ProgramDone(BaseException):
    """Raised from a hook to end a wave-pass program early (BaseException: passes the interpreter)."""


class TraceSession(Session):
    """Counts sampled programs of every launch and measures its wave footprint."""

    count_ops = True

    def __init__(self, trace_programs: int, rng: random.Random, wave_programs: int = WAVE_PROGRAMS):
        super().__init__()
        self.trace_programs = max(1, int(trace_programs))
        self.rng = rng
        self.wave_programs = wave_programs
        self.launches: list[LaunchTrace] = []
        self._counts: ProgramCounts | None = None
        self._wave_targets: set[str] = set()
        self._wave_first: dict[str, int] | None = None

    def launch(self, ctx: LaunchContext) -> None:
        sampled = sample_programs(ctx.num_programs, self.trace_programs, self.rng)
        counts = []
        for pid in sampled:
            LOOP_STATE.reset()
            self._counts = ProgramCounts(ctx.tensors.tensors)
            try:
                ctx.run_program(pid)
            finally:
                self._counts.loop_trips = LOOP_STATE.loop_trips
                counts.append(self._counts)
                self._counts = None
        inputs = set().union(*(c.loaded() for c in counts)) if counts else set()
        footprint = self._wave(ctx, inputs) if inputs else {}
        self.launches.append(build_launch_trace(ctx, sampled, counts, footprint))

    def _wave(self, ctx: LaunchContext, inputs: set[str]) -> dict[str, list[list[int]]]:
        first: dict[str, list[int | None]] = {name: [] for name in sorted(inputs)}
        self._wave_targets = inputs
        try:
            for pid in range(min(ctx.num_programs, self.wave_programs)):
                LOOP_STATE.reset()
                self._wave_first = {}
                try:
                    ctx.run_program(pid)
                except _ProgramDone:
                    pass
                for name in first:
                    first[name].append(self._wave_first.get(name))
        finally:
            self._wave_first = None
        widths = wave_widths(ctx.num_programs, self.wave_programs)
        return {name: [[w, len({s for s in sectors[:w] if s is not None})] for w in widths]
                for name, sectors in first.items()}

    def record_access(self, kind, parts, elem_bytes, block_elems) -> None:
        if self._wave_first is not None:
            if kind == "store":
                return
            for tensor, addrs in parts:
                if tensor.name in self._wave_targets and tensor.name not in self._wave_first:
                    self._wave_first[tensor.name] = (int(addrs.min()) - tensor.data_ptr) // SECTOR_BYTES
            if len(self._wave_first) == len(self._wave_targets):
                raise _ProgramDone()
            return
        self._counts.max_block = max(self._counts.max_block, block_elems)
        for tensor, addrs in parts:
            self._counts.access(kind, tensor, addrs, elem_bytes)

    def on_dot(self, a, b) -> None:
        if self._counts is not None:
            self._counts.dot(a, b)

    def on_ops(self, kind, elems, ops_per_elem) -> None:
        if self._counts is not None:
            self._counts.op(kind, elems, ops_per_elem)


def _shape_text(env: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in env.items()) + "}"


def trace_config(launch: Callable[..., Any], task: Task, shape_index: int, config: dict[str, Any],
                 hints: dict[str, Any], *, seed: int, trace_programs: int, timeout: float | None,
                 path: Path | None = None) -> ConfigTrace:
    """Trace ``launch`` at ``task.target_shapes[shape_index]`` with one kernel config."""
    env = task.target_shapes[shape_index]
    start = time.perf_counter()
    rng = random.Random(f"{seed}:{shape_index}:{config_key(config)}")
    session = TraceSession(trace_programs, rng)
    inputs = empty_inputs(task, env, seed)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with active(session), time_limit(timeout, "tracing"):
                launch(*inputs, **config, **hints)
    except CandidateTimeout as exc:
        raise TraceFailure(f"{exc}; even with sampled programs and loops the kernel runs too long "
                           "(an endless or data-dependent loop?).") from None
    except BaseException as exc:   # noqa: BLE001 - anything the candidate raises fails the trace
        if session.violation is not None:
            raise TraceFailure(str(session.violation)) from None
        raise TraceFailure(f"launch raised {describe_exception(exc, path)}.") from None
    finally:
        del inputs
    if session.violation is not None:
        raise TraceFailure(str(session.violation))
    if not session.launches:
        raise TraceFailure("launch ran no Triton kernel.")
    return ConfigTrace(shape_index=shape_index, shape=dict(env), config=dict(config),
                       launches=session.launches, seconds=time.perf_counter() - start)


def trace_candidate(source: str, task: Task, directory: Path, *, kernel_configs: list[dict[str, Any]],
                    hints: dict[str, Any], seed: int, trace_programs: int,
                    timeout: float | None = 60.0) -> tuple[GateResult, list[ConfigTrace]]:
    """The trace gate: every target shape x kernel config, with loop-sampled kernels."""
    start = time.perf_counter()

    def fail(reason: str) -> tuple[GateResult, list[ConfigTrace]]:
        return GateResult(name="trace", passed=False, reason=reason, seconds=time.perf_counter() - start), []

    try:
        module, path = import_candidate(rewrite_loops(source), directory, inject={HELPER_NAME: sampled_loop},
                                        timeout=timeout)
    except BaseException as exc:   # noqa: BLE001
        return fail(f"the loop-sampled module failed to import: {describe_exception(exc)}.")
    traces: list[ConfigTrace] = []
    try:
        for shape_index, env in enumerate(task.target_shapes):
            for config in kernel_configs:
                try:
                    traces.append(trace_config(module.launch, task, shape_index, config, hints, seed=seed,
                                               trace_programs=trace_programs, timeout=timeout, path=path))
                except TraceFailure as exc:
                    return fail(f"shape {_shape_text(env)}, config {config_key(config) or 'default'}: {exc}")
    finally:
        sys.modules.pop(module.__name__, None)
    return GateResult(name="trace", passed=True, seconds=time.perf_counter() - start,
                      details={"traces": len(traces), "seconds": [round(t.seconds, 3) for t in traces]}), traces
