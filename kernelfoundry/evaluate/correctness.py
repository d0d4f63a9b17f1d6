"""The correctness gate: the candidate's ``launch`` against the task's reference at the check shapes.

Runs every check shape x value profile with the default config, then every other
kernel config with the "normal" profile, on fresh seeded inputs each time.  Each
run is guarded: ``torch.empty*`` allocations made by ``launch`` are NaN-poisoned
(unwritten elements show up), every kernel load/store is bounds-checked against
the launch's tensor arguments, outputs must be fresh (no aliasing of inputs, no
buffer reused across calls), written by a kernel, of the reference's shape and
dtype, and the first run is repeated for determinism.  Failure reasons name the
shape, profile, config, the error size and where mismatches cluster.
"""

from __future__ import annotations

import math
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import torch

from ..candidate import config_key
from ..task import Task
from .inputs import PROFILES, InputFactory
from .loader import CandidateTimeout, LoadedCandidate, describe_exception, time_limit
from .records import GateResult
from .trace_hooks import Session, active

_POISONED = ("empty", "empty_like", "empty_strided")


class CheckFailure(Exception):
    """One run failed; the message is the gate's reason (without the run's context)."""


def load_reference(task: Task) -> Callable[..., Any]:
    """``reference`` from the task's source, executed in its own namespace."""
    namespace: dict[str, Any] = {"__name__": f"kf_reference_{task.name}"}
    exec(compile(task.reference, f"<reference of task {task.name}>", "exec"), namespace)
    return namespace["reference"]


def _poison(tensor: Any) -> Any:
    if isinstance(tensor, torch.Tensor) and tensor.numel():
        if tensor.is_floating_point() or tensor.is_complex():
            tensor.fill_(float("nan"))
        elif tensor.dtype == torch.bool:
            tensor.fill_(True)
        else:
            tensor.fill_(torch.iinfo(tensor.dtype).max)
    return tensor


@contextmanager
def poisoned_allocations() -> Iterator[None]:
    """``torch.empty``/``empty_like``/``empty_strided``/``Tensor.new_empty`` return poisoned memory."""
    originals = {name: getattr(torch, name) for name in _POISONED}
    original_new_empty = torch.Tensor.new_empty

    def wrap(fn):
        def poisoned(*args, **kwargs):
            return _poison(fn(*args, **kwargs))
        return poisoned

    for name, fn in originals.items():
        setattr(torch, name, wrap(fn))
    torch.Tensor.new_empty = wrap(original_new_empty)
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(torch, name, fn)
        torch.Tensor.new_empty = original_new_empty


class CheckSession(Session):
    """Runs every program of every launch, bounds-checked; remembers which storages were stored to."""

    def __init__(self) -> None:
        super().__init__()
        self.stored: set[int] = set()
        self.launches = 0

    def launch(self, ctx) -> None:
        self.launches += 1
        super().launch(ctx)

    def record_access(self, kind, parts, elem_bytes, block_elems) -> None:
        if kind != "load":
            for tensor, _ in parts:
                self.stored.add(tensor.start)


@dataclass
class Run:
    """The context of one run, rendered at the front of a failure reason."""

    shape: dict[str, int]
    profile: str
    config: dict[str, Any]

    def __str__(self) -> str:
        shape = ", ".join(f"{k}={v}" for k, v in self.shape.items())
        return f"shape {{{shape}}}, profile '{self.profile}', config {config_key(self.config) or 'default'}"


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


def _as_tensor_list(value: Any, what: str) -> list[torch.Tensor]:
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    for i, item in enumerate(items):
        if not isinstance(item, torch.Tensor):
            raise CheckFailure(f"{what} returned {type(item).__name__} at position {i}; expected a torch.Tensor.")
    return items


def guarded_launch(cand: LoadedCandidate, inputs: list[torch.Tensor], params: dict[str, Any],
                   timeout: float | None) -> tuple[list[torch.Tensor], CheckSession]:
    """Call ``launch`` with poisoned allocations and bounds-checked kernels; raise CheckFailure."""
    session = CheckSession()
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with active(session), poisoned_allocations(), time_limit(timeout, "launch"):
                result = cand.launch(*inputs, **params)
    except CandidateTimeout as exc:
        raise CheckFailure(f"{exc}; the kernel must finish quickly at these small shapes "
                           "(look for an endless loop).") from None
    except BaseException as exc:   # noqa: BLE001 - anything the candidate raises is a failed run
        if session.violation is not None:
            raise CheckFailure(str(session.violation)) from None
        raise CheckFailure(f"launch raised {describe_exception(exc, cand.path)}.") from None
    if session.violation is not None:   # raised inside the kernel but swallowed somewhere
        raise CheckFailure(str(session.violation))
    if session.launches == 0:
        raise CheckFailure("launch ran no Triton kernel; it must compute its outputs in @triton.jit kernels.")
    return _as_tensor_list(result, "launch"), session


def _check_fresh(outputs: list[torch.Tensor], inputs: list[torch.Tensor], names: tuple[str, ...],
                 session: CheckSession) -> None:
    spans = [_storage_span(t) for t in inputs]
    for i, out in enumerate(outputs):
        lo, hi = _storage_span(out)
        for name, (a, b) in zip(names, spans):
            if lo < b and a < hi:
                raise CheckFailure(f"output {i} shares memory with input '{name}'; launch must return a "
                                   "freshly allocated output (torch.empty) written by the kernel.")
        if out.numel() and lo not in session.stored:
            raise CheckFailure(f"output {i} was not written by any Triton kernel (no kernel stored into its "
                               "memory); launch must allocate the output and compute it in a kernel.")


def _span_text(mask: np.ndarray, noun: str) -> str:
    idx = np.flatnonzero(mask)
    n, first, last = mask.size, int(idx[0]), int(idx[-1])
    if idx.size == 1:
        return f"{noun} {first}"
    if last - first + 1 == idx.size:
        if first == 0 and last == n - 1:
            return f"all {noun}s"
        if last == n - 1:
            return f"last {n - first} {noun}s ({noun}s {first}..)"
        if first == 0:
            return f"first {last + 1} {noun}s"
        return f"{noun}s {first}..{last}"
    return f"{idx.size} {noun}s between {first} and {last}"


def describe_mismatch(bad: np.ndarray) -> str:
    """Where the True entries of *bad* cluster: 'every element', 'last 31 columns', 'rows 64..'."""
    total, count = bad.size, int(bad.sum())
    if count == total:
        return "every element"
    if bad.ndim <= 1:
        return _span_text(bad.reshape(-1), "element")
    flat = bad.reshape(-1, bad.shape[-1])
    rows, cols = flat.any(axis=1), flat.any(axis=0)
    if rows.all() and flat[:, cols].all():
        return _span_text(cols, "column")
    if cols.all() and flat[rows].all():
        return _span_text(rows, "row")
    r, c = np.argwhere(flat)[0]
    return (f"{count} of {total} elements ({100.0 * count / total:.1f}%) in {_span_text(rows, 'row')}, "
            f"{_span_text(cols, 'column')}; first at [{r}, {c}]")


def compare(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> str | None:
    """``None`` if *out* matches *ref* (allclose, NaN where the reference has NaN); else why not."""
    if tuple(out.shape) != tuple(ref.shape):
        return f"has shape {tuple(out.shape)}, the reference {tuple(ref.shape)}"
    if out.dtype != ref.dtype:
        return f"has dtype {out.dtype}, the reference {ref.dtype}; cast before storing (x.to(ptr.dtype.element_ty))"
    o = out.detach().to(torch.float64).numpy()
    r = ref.detach().to(torch.float64).numpy()
    nonfinite = ~np.isfinite(o) & np.isfinite(r)
    if nonfinite.any():
        nan_count = int((np.isnan(o) & np.isfinite(r)).sum())
        return (f"has NaN/Inf at {int(nonfinite.sum())} of {o.size} positions ({nan_count} NaN) where the "
                f"reference is finite: {describe_mismatch(nonfinite)}; outputs start NaN-poisoned, so NaN "
                "usually marks elements the kernel never wrote")
    with np.errstate(all="ignore"):
        close = np.isclose(o, r, rtol=rtol, atol=atol, equal_nan=True)
        if close.all():
            return None
        bad = ~close
        both = np.isfinite(o) & np.isfinite(r)
        err = np.abs(o - r)[both]
        rel = (np.abs(o - r) / np.abs(r))[both & (np.abs(r) > 0)]
    max_abs = float(err.max()) if err.size else math.inf
    max_rel = float(rel.max()) if rel.size else math.inf
    return (f"{int(bad.sum())} of {o.size} elements differ (max abs err {max_abs:.3g}, max rel err "
            f"{max_rel:.3g}; atol {atol:g}, rtol {rtol:g}): {describe_mismatch(bad)}")


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.detach().reshape(-1).contiguous().view(torch.uint8).numpy()


class CorrectnessChecker:
    """Runs the gate's cases for one loaded candidate; see :func:`check_correctness`."""

    def __init__(self, cand: LoadedCandidate, task: Task, *, seed: int, hints: dict[str, Any],
                 timeout: float | None):
        self.cand, self.task, self.hints, self.timeout = cand, task, hints, timeout
        self.factory = InputFactory(task, seed)
        self.reference = load_reference(task)
        self.runs = 0

    def run(self, run: Run, *, repeat: bool = False) -> None:
        """One checked run (and, with *repeat*, a second one on identical inputs); raise CheckFailure."""
        inputs = self.factory.make(run.shape, run.profile)
        pristine = [t.clone() for t in inputs]
        params = {**run.config, **self.hints}
        outputs, session = guarded_launch(self.cand, inputs, params, self.timeout)
        self.runs += 1
        try:
            expected_value = self.reference(*[t.clone() for t in pristine])
        except Exception as exc:
            raise RuntimeError(f"the task's reference failed at {run}: {exc!r}") from exc
        try:
            expected = _as_tensor_list(expected_value, "the reference")
        except CheckFailure as exc:
            raise RuntimeError(f"the task's reference is malformed: {exc}") from None
        try:
            self._examine(outputs, expected, inputs, pristine, session)
            if repeat:
                self._repeat(pristine, outputs, params)
        except CheckFailure:
            raise
        except Exception as exc:   # noqa: BLE001 - the outputs are candidate objects
            raise CheckFailure(f"its outputs could not be checked ({type(exc).__name__}: {exc}); return dense "
                               "CPU tensors.") from None

    def _examine(self, outputs: list[torch.Tensor], expected: list[torch.Tensor], inputs: list[torch.Tensor],
                 pristine: list[torch.Tensor], session: CheckSession) -> None:
        for i, out in enumerate(outputs):
            if out.layout != torch.strided or out.device.type != "cpu":
                raise CheckFailure(f"output {i} is a {out.layout} tensor on {out.device}; return dense CPU tensors.")
        _check_fresh(outputs, inputs, self.task.input_names, session)
        for name, before, after in zip(self.task.input_names, pristine, inputs):
            if not np.array_equal(_bits(before), _bits(after)):
                raise CheckFailure(f"launch modified its input '{name}'; inputs are read-only.")
        if len(outputs) != len(expected):
            raise CheckFailure(f"launch returned {len(outputs)} tensor(s); the reference returns {len(expected)}.")
        for i, (out, ref) in enumerate(zip(outputs, expected)):
            problem = compare(out, ref, self.task.atol, self.task.rtol)
            if problem:
                raise CheckFailure(f"output {i} {problem}.")

    def _repeat(self, pristine: list[torch.Tensor], first: list[torch.Tensor], params: dict[str, Any]) -> None:
        inputs = [t.clone() for t in pristine]
        second, session = guarded_launch(self.cand, inputs, params, self.timeout)
        self.runs += 1
        first_spans = {_storage_span(t)[0] for t in first}
        for i, out in enumerate(second):
            if _storage_span(out)[0] in first_spans:
                raise CheckFailure(f"output {i} is the same buffer on two calls (a cached output); allocate a "
                                   "fresh output in launch on every call.")
        for i, (a, b) in enumerate(zip(first, second)):
            same_layout = a.shape == b.shape and a.dtype == b.dtype
            if same_layout and np.array_equal(_bits(a), _bits(b)):
                continue
            detail = "its shape or dtype changes"
            if same_layout:
                differ = ~torch.eq(a, b) & ~(torch.isnan(a) & torch.isnan(b)) if a.is_floating_point() else a != b
                detail = f"{int(differ.sum())} of {a.numel()} elements change"
            raise CheckFailure(f"nondeterministic: a second run on identical inputs changes output {i} "
                               f"({detail}); results must not depend on call count, state or timing.")


def check_correctness(cand: LoadedCandidate, task: Task, *, kernel_configs: list[dict[str, Any]],
                      hints: dict[str, Any], seed: int, profiles: tuple[str, ...] = PROFILES,
                      timeout: float | None = 30.0) -> GateResult:
    """The correctness gate over every check shape x profile (default config) and every other config."""
    start = time.perf_counter()
    checker = CorrectnessChecker(cand, task, seed=seed, hints=hints, timeout=timeout)
    float_inputs = any(spec.is_float for spec in task.inputs)
    profiles = tuple(profiles) if float_inputs else ("normal",)
    shapes = sorted(task.check_shapes, key=lambda env: sum(math.prod(s) for s in task.input_shapes(env).values()))
    runs = [Run(env, p, kernel_configs[0]) for env in shapes for p in profiles]
    runs += [Run(env, "normal", config) for config in kernel_configs[1:] for env in shapes]
    for index, run in enumerate(runs):
        try:
            checker.run(run, repeat=index == 0)
        except CheckFailure as exc:
            return GateResult(name="correctness", passed=False, reason=f"{run}: {exc}",
                              seconds=time.perf_counter() - start,
                              details={"runs": checker.runs, "failed_run": index})
    return GateResult(name="correctness", passed=True, seconds=time.perf_counter() - start,
                      details={"runs": checker.runs, "shapes": len(shapes), "profiles": list(profiles),
                               "configs": len(kernel_configs)})
