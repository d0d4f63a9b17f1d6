"""The correctness gate, judged in the driver: the plan of check runs and the verdict on their outputs.

The driver plans the runs (:func:`plan_runs`): the default config on every value
profile at the smallest check shape (the first run repeated for determinism) and on
"normal", "large" and one more profile drawn by the seed at the larger check shapes,
every other kernel config at the smallest check shape with the "normal" profile; for
the configs the model picks (:mod:`confirm`), the larger check shapes on "normal"
(:func:`plan_picked_runs`), the span and grid-span shapes (:mod:`span_shape`: rows
spanning several blocks, many programs) on "normal" and the long-row shape on the
"offset" profile (rows near the target's length, values far from zero).  Every run executes its
programs in a seeded shuffled order.  The sandboxed child runs them and reports raw outputs
(:mod:`run_checks`); the judge here, which never imports candidate code, draws the
same inputs, runs the task's reference, and checks: output count, shapes, dtypes,
values (NaN-poisoned ``empty*`` outputs expose unwritten elements), outputs written
by a kernel and not aliasing an input, inputs unmodified, and the repeat bit-for-bit
identical in a fresh buffer; atol follows the outputs' scale (:func:`output_scale`).  Reasons name the shape, profile, config, the error
size and where mismatches cluster.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from ...candidate import config_key
from ...task import Task
from ...sandbox import BlobReader, ChannelError
from ...harness.inputs import LONG_PROFILE, WIDE_ONLY, InputFactory, digest, profiles_for
from ...records import CPU_TIME_LIMIT, INCONCLUSIVE, GateResult
from ..contract.span_shape import aligned_shape, block_size, grid_span_shape, long_shapes, span_shape


class CheckFailure(Exception):
    """One run failed; the message is the gate's reason (without the run's context)."""


class MalformedReport(ValueError):
    """The child's report does not match the plan (a bug or a forged channel)."""


_REFERENCES: dict[tuple[str, str], Callable[..., Any]] = {}


def load_reference(task: Task) -> Callable[..., Any]:
    """``reference`` from the task's source (trusted: the task author's), cached per task."""
    key = (task.name, task.reference)
    if key not in _REFERENCES:
        namespace: dict[str, Any] = {"__name__": f"kf_reference_{task.name}"}
        exec(compile(task.reference, f"<reference of task {task.name}>", "exec"), namespace)
        _REFERENCES[key] = namespace["reference"]
    return _REFERENCES[key]


@dataclass
class Run:
    """The context of one run, rendered at the front of a failure reason."""

    shape: dict[str, int]
    profile: str
    config: dict[str, Any]
    span: bool = False
    long: bool = False
    aligned: bool = False

    def __str__(self) -> str:
        shape = ", ".join(f"{k}={v}" for k, v in self.shape.items())
        what = ("long-row shape" if self.long else "aligned shape" if self.aligned
                else "span shape" if self.span else "shape")
        return f"{what} {{{shape}}}, profile '{self.profile}', config {config_key(self.config) or 'default'}"


def _reference_runs_at(task: Task, env: dict[str, int]) -> bool:
    from ...perfmodel import profile_reference
    try:
        return profile_reference(task, env).exact
    except Exception:  # noqa: BLE001 - any failure means: not at this shape
        return False


def _number(runs: list[dict[str, Any]], *, seed: int, first_call: int) -> list[dict[str, Any]]:
    for call, run in enumerate(runs, start=first_call):
        run["call"] = call
        run["order_seed"] = (seed * 7_919 + call) % (2 ** 31)
    return runs


#: Profiles every larger check shape runs (accumulation over long rows: precision and overflow).
LARGER_SHAPE_PROFILES = ("normal", "large")


def larger_shape_profiles(profiles: tuple[str, ...], *, seed: int, shape_index: int) -> tuple[str, ...]:
    """The profiles a check shape past the smallest runs: :data:`LARGER_SHAPE_PROFILES` plus one more
    drawn by the seed (never the range-only ones).  Value-dependent behaviour is caught on the smallest
    shape, which runs every profile; the larger shapes are the interpreter's costliest runs."""
    always = [p for p in LARGER_SHAPE_PROFILES if p in profiles]
    rest = [p for p in profiles if p not in always and p not in WIDE_ONLY]
    extra = [rest[(seed * 7_919 + shape_index * 104_729) % len(rest)]] if rest else []
    return tuple(always + extra)


def plan_runs(task: Task, configs: list[dict[str, Any]], *, seed: int,
              profiles: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The check runs for the child, in order (JSON-able)."""
    profiles = profiles_for(task, profiles or profiles_for(task))
    shapes = sorted(task.check_shapes, key=lambda env: sum(math.prod(s) for s in task.input_shapes(env).values()))
    runs = [{"shape": dict(env), "profile": p, "config": dict(configs[0])} for i, env in enumerate(shapes)
            for p in (profiles if i == 0 else larger_shape_profiles(profiles, seed=seed, shape_index=i))]
    runs[0]["repeat"] = True
    runs[0]["launch_order"] = True        # programs in launch order once: the trace's ticket schedule (contract/tickets.py)
    runs += [{"shape": dict(shapes[0]), "profile": "normal", "config": dict(c)} for c in configs[1:]]
    return _number(runs, seed=seed, first_call=1)


def plan_picked_runs(task: Task, configs: list[dict[str, Any]], done: list[dict[str, Any]], *, seed: int,
                     first_call: int) -> list[dict[str, Any]]:
    """For each of *configs* (the model's picks), a "normal" run at every check shape no run in *done*
    covered for it: :func:`plan_runs` runs the configs past the default at the smallest check shape
    only, and a config the model picks runs at the larger ones before it is reported."""
    seen = {(config_key(r["config"]), config_key(r["shape"])) for r in done}
    runs = [{"shape": dict(env), "profile": "normal", "config": dict(c)} for c in configs
            for env in task.check_shapes if (config_key(c), config_key(env)) not in seen]
    return _number(runs, seed=seed, first_call=first_call)


def plan_span_runs(task: Task, probes: Any, configs: list[dict[str, Any]], *, seed: int, first_call: int,
                   grid: bool = True) -> list[dict[str, Any]]:
    """For each of *configs* with a grid probe: a run at its span shape (rows spanning several blocks)
    and, with *grid*, one at its grid-span shape (many programs), where the reference runs."""
    by_key = {config_key(p["config"]): p for p in probes if isinstance(p, dict) and isinstance(p.get("config"), dict)} \
        if isinstance(probes, list) else {}
    runs = []
    floats = len(profiles_for(task)) > 1
    for config in configs:
        probe = by_key.get(config_key(config), {})
        shapes = [span_shape(task, config, probe)] + ([grid_span_shape(task, config, probe)] if grid else [])
        for env in shapes:
            if env is not None and env not in [r["shape"] for r in runs if r["config"] == config] \
                    and _reference_runs_at(task, env):
                runs.append({"shape": env, "profile": "normal", "config": dict(config), "span": True})
        # few rows, as long as the budget allows, on values far from zero (see inputs.LONG_PROFILE): the
        # value ranges of the check shapes, at row lengths near the target's
        for env in long_shapes(task, config, probe) if floats else []:
            if _reference_runs_at(task, env):
                runs.append({"shape": env, "profile": LONG_PROFILE, "config": dict(config), "span": True,
                             "long": True})
    return _number(runs, seed=seed, first_call=first_call)


def plan_aligned_runs(task: Task, targets: list[dict[str, int]], configs: list[dict[str, Any]], *, seed: int,
                      first_call: int) -> list[dict[str, Any]]:
    """For each of *configs*: a run at the shape aligned like each target shape (:func:`aligned_shape`),
    where the reference runs.  The shape is the verifier's choice, so it is planned as a span run."""
    runs: list[dict[str, Any]] = []
    for target in targets:
        env = aligned_shape(task, target)
        if env is None or not _reference_runs_at(task, env):
            continue
        for config in configs:
            run = {"shape": env, "profile": "normal", "config": dict(config), "span": True, "aligned": True}
            if run not in runs:
                runs.append(run)
    return _number(runs, seed=seed, first_call=first_call)


FLAG_VALUES = (True, False, 0, 1)


def launched_flags(kernels: Any) -> set[tuple[str, tuple]]:
    """(kernel, flag constexprs) pairs from a run record's ``kernels``: constexprs valued 0/1/True/False
    are code-path switches; block sizes and other values are left out."""
    out = set()
    for item in kernels if isinstance(kernels, list) else []:
        if isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict):
            flags = tuple(sorted((str(k), bool(v)) for k, v in item[1].items()
                                 if isinstance(v, (bool, int)) and v in FLAG_VALUES))
            out.add((str(item[0]), flags))
    return out


def traced_flags(signature: Any, kernel: str) -> tuple[str, tuple]:
    """The (kernel, flag constexprs) pair of one traced launch, from its compile signature."""
    args = signature.get("args", []) if isinstance(signature, dict) else []
    flags = tuple(sorted((a["name"], bool(a["value"])) for a in args if isinstance(a, dict)
                         and a.get("kind") == "constexpr" and isinstance(a.get("value"), (bool, int))
                         and a["value"] in FLAG_VALUES))
    return kernel, flags


def unchecked_paths(traces: list, records: list[tuple[dict[str, Any], Any]], configs: list[dict[str, Any]]) -> str | None:
    """Why a config the model picked runs, at a target shape, a branch arm (:mod:`arms`), a kernel or a
    code-path switch (a 0/1 constexpr) that no correctness run of that config executed; None when every
    path was checked.

    *records*: (planned run, its record) pairs of every correctness run."""
    checked: dict[str, set] = {}
    arms: dict[str, set] = {}
    for planned, record in records:
        if isinstance(record, dict):
            key = config_key(planned["config"])
            checked.setdefault(key, set()).update(launched_flags(record.get("kernels")))
            taken, bucket = record.get("arms"), arms.setdefault(key, set())
            if isinstance(taken, list):
                bucket.update(a for a in taken if isinstance(a, str))
    for config in configs:
        key = config_key({k: v for k, v in config.items() if k not in ("num_warps", "num_stages")})
        for trace in traces:
            if config_key(trace.config) != key:
                continue
            unchecked = sorted(set(trace.arms) - arms.get(key, set()))
            if unchecked:
                shape = ", ".join(f"{k}={v}" for k, v in trace.shape.items())
                return (f"at the target shape {{{shape}}} config {key or 'default'} takes "
                        f"{_arms_text(unchecked)}, which no correctness run took (the check shapes and the span "
                        "shapes went the other way): what it computes there is unchecked. Take the same branches "
                        "at every size (compute sizes, masks and trip counts from the shapes without "
                        "size thresholds), or make the choice a PARAMS constexpr the checks run.")
            for launch in trace.launches:
                path = traced_flags(launch.signature, launch.kernel)
                if launch.signature is not None and path not in checked.get(key, set()):
                    flags = ", ".join(f"{k}={v}" for k, v in path[1]) or "no switches"
                    shape = ", ".join(f"{k}={v}" for k, v in trace.shape.items())
                    return (f"at the target shape {{{shape}}} config {key or 'default'} runs kernel {path[0]} "
                            f"({flags}), a path no correctness run executed (the check shapes and the span shapes "
                            "took others): what it computes there is unchecked. Use the same kernels and "
                            "switches at every size, or switch on something the checked shapes exercise.")
    return None


_ARM_WORDS = {"then": "the `if` branch", "else": "the `else` branch", "body": "the loop body"}


def _arms_text(arms: list[str]) -> str:
    """``the else branch at line 31 (kernel rms_kernel)`` for the first arms of a list."""
    parts = []
    for arm in arms[:3]:
        where, line, _col, kind = (arm.rsplit(":", 3) + ["", "", "", ""])[:4]
        what = _ARM_WORDS.get(kind, "the short-circuited operand" if kind.startswith("operand") else kind)
        scope = "in launch / host code" if where == "host" else f"in kernel {where}"
        parts.append(f"{what} at line {line} ({scope})")
    more = f" and {len(arms) - 3} more" if len(arms) > 3 else ""
    return ", ".join(parts) + more


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


def rms(ref: np.ndarray) -> float:
    """The root-mean-square of the finite values of *ref* (0 when there are none)."""
    finite = ref[np.isfinite(ref)]
    return float(np.sqrt(np.mean(finite * finite))) if finite.size else 0.0


#: An output may shrink this far below its size at the smallest check shape before atol shrinks with it
#: (the draws differ a little; at the smallest check shape itself nothing changes).
SCALE_SLACK = 2.0
#: atol is never scaled below this fraction of itself (an all-zero reference keeps a tolerance).
SCALE_FLOOR = 1e-6


def output_scale(ref: np.ndarray, base: float | None = None) -> float:
    """The magnitude the absolute tolerance applies to.

    A task's atol is written for its outputs at the check shapes.  Above unit scale it grows with the
    reference's root-mean-square (at the 'large' and 'wide' profiles, x1e3 and x1e5, the reference's own
    fp32 rounding exceeds it: a LayerNorm with large weights, a TF32 GEMM).  With *base*, the RMS of the
    same output at the smallest check shape on the same profile, it also shrinks with the output: where
    the output is much smaller than there (a softmax over 200K columns: 1e-6..1e-5, against atol 1e-5),
    atol keeps its ratio to the output's RMS (with :data:`SCALE_SLACK`), so an error of 1% of every value
    cannot hide under it.  It never grows past the unscaled rule.
    """
    r = rms(ref)
    scale = max(1.0, r)
    if base is not None and base > 0 and math.isfinite(base):
        scale = min(scale, max(SCALE_FLOOR, SCALE_SLACK * max(1.0, base) * r / base))
    return scale


def compare(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, base: float | None = None) -> str | None:
    """``None`` if *out* matches *ref* (allclose with atol scaled by :func:`output_scale`, NaN where
    the reference has NaN); else why not.  *base*: see :func:`output_scale`."""
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
        scale = output_scale(r, base)
        close = np.isclose(o, r, rtol=rtol, atol=atol * scale, equal_nan=True)
        if close.all():
            return None
        bad = ~close
        both = np.isfinite(o) & np.isfinite(r)
        err = np.abs(o - r)[both]
        rel = (np.abs(o - r) / np.abs(r))[both & (np.abs(r) > 0)]
    max_abs = float(err.max()) if err.size else math.inf
    max_rel = float(rel.max()) if rel.size else math.inf
    scaled = f" x output scale {scale:.3g}" if scale != 1.0 else ""
    return (f"{int(bad.sum())} of {o.size} elements differ (max abs err {max_abs:.3g}, max rel err "
            f"{max_rel:.3g}; atol {atol:g}{scaled}, rtol {rtol:g}): {describe_mismatch(bad)}")


_BASE_RMS: dict[tuple, list[float]] = {}


def base_rms(task: Task, profile: str) -> list[float]:
    """Per output, the reference's RMS at the task's smallest check shape on *profile* (a draw of the
    task's own, seed 0: the candidate cannot move it), cached per task."""
    env = min(task.check_shapes, key=lambda e: sum(math.prod(s) for s in task.input_shapes(e).values()))
    key = (task.name, task.reference, profile, tuple(sorted(env.items())))
    if key not in _BASE_RMS:
        inputs = InputFactory(task, 0).make(env, profile, call=0)
        outputs = _as_list(load_reference(task)(*inputs))
        _BASE_RMS[key] = [rms(t.detach().to(torch.float64).numpy()) for t in outputs]
    return _BASE_RMS[key]


_TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
                 "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
                 "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}


def output_tensor(entry: dict[str, Any], blob: BlobReader) -> torch.Tensor:
    """A reported output as a tensor (its bytes from the data channel, checked against its dtype/shape)."""
    dtype = _TORCH_DTYPES.get(entry.get("dtype"))
    if dtype is None:
        raise MalformedReport(f"output dtype {str(entry.get('dtype'))[:30]!r} is unknown")
    array = blob.get(entry["ref"])
    shape = entry["shape"]
    if not isinstance(shape, list) or math.prod(shape) != array.size:
        raise MalformedReport("an output's shape does not match its data")
    tensor = torch.from_numpy(array.copy())
    if dtype == torch.bfloat16:
        tensor = tensor.view(torch.bfloat16)
    elif tensor.dtype != dtype:
        raise MalformedReport("an output's data does not match its dtype")
    return tensor.reshape(shape)


def _as_list(value: Any) -> list[torch.Tensor]:
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    if not all(isinstance(t, torch.Tensor) for t in items):
        raise RuntimeError("the task's reference must return tensors")
    return items


class Judge:
    """Judges the child's check report against the plan; see the module docstring."""

    def __init__(self, task: Task, plan: list[dict[str, Any]], *, seed: int):
        self.task, self.plan = task, plan
        self.factory = InputFactory(task, seed)
        self.reference = load_reference(task)

    def judge(self, report: dict[str, Any], blob: BlobReader) -> GateResult:
        start = time.perf_counter()
        records = report.get("runs")
        failed_at, error = report.get("failed_run"), report.get("error")
        if not isinstance(records, list) or len(records) > len(self.plan):
            raise MalformedReport("the report holds more runs than were planned")
        for index, planned in enumerate(self.plan):
            run = Run(planned["shape"], planned["profile"], planned["config"], planned.get("span", False),
                      planned.get("long", False), planned.get("aligned", False))
            try:
                if index >= len(records):
                    if failed_at != index or not isinstance(error, str):
                        raise MalformedReport(f"run {index} is missing from the report")
                    raise CheckFailure(error[:2000])
                self.check(planned, records[index], blob)
            except CheckFailure as exc:
                details: dict[str, Any] = {"runs": index + 1, "failed_run": index}
                reason = f"{run}: {exc}"
                if planned.get("span") and index >= len(records) and CPU_TIME_LIMIT in str(exc):
                    # the span shapes are sized by the verifier's estimate of the interpreter's cost: a run
                    # there that uses up its CPU time is the verifier's limit (checked shapes passed)
                    details["inconclusive"], reason = True, f"{INCONCLUSIVE} ({reason})"
                return GateResult(name="correctness", passed=False, reason=reason,
                                  seconds=time.perf_counter() - start, details=details)
        return GateResult(name="correctness", passed=True, seconds=time.perf_counter() - start,
                          details={"runs": len(self.plan), "span_runs": sum(1 for r in self.plan if r.get("span")),
                                   "profiles": sorted({r["profile"] for r in self.plan}),
                                   "configs": len({config_key(r["config"]) for r in self.plan})})

    def check(self, planned: dict[str, Any], record: dict[str, Any], blob: BlobReader) -> None:
        inputs = self.factory.make(planned["shape"], planned["profile"], call=planned["call"])
        mine = [digest(t) for t in inputs]
        if record.get("inputs_before") != mine:
            raise MalformedReport("the child's inputs differ from the judge's (the report cannot be trusted)")
        try:
            expected = _as_list(self.reference(*[t.clone() for t in inputs]))
        except Exception as exc:
            raise RuntimeError(f"the task's reference failed at shape {planned['shape']}: {exc!r}") from exc
        try:
            outputs = [output_tensor(e, blob) for e in record["outputs"]]
        except (KeyError, TypeError, ChannelError) as exc:
            raise MalformedReport(f"an output record is malformed ({exc})") from None
        names = self.task.input_names
        for i, entry in enumerate(record["outputs"]):
            if entry.get("aliases_input"):
                raise CheckFailure(f"output {i} shares memory with input '{entry['aliases_input']}'; launch must "
                                   "return a freshly allocated output (torch.empty) written by the kernel.")
            if not entry.get("written"):
                raise CheckFailure(f"output {i} was not written by any Triton kernel (no kernel stored into its "
                                   "memory); launch must allocate the output and compute it in a kernel.")
        for name, before, after in zip(names, mine, record.get("inputs_after", [])):
            if before != after:
                raise CheckFailure(f"launch modified its input '{name}'; inputs are read-only.")
        if len(outputs) != len(expected):
            raise CheckFailure(f"launch returned {len(outputs)} tensor(s); the reference returns {len(expected)}.")
        bases = base_rms(self.task, planned["profile"])
        for i, (out, ref) in enumerate(zip(outputs, expected)):
            problem = compare(out, ref, self.task.atol, self.task.rtol, bases[i] if i < len(bases) else None)
            if problem:
                raise CheckFailure(f"output {i} {problem}.")
            if ref.is_contiguous() and record["outputs"][i].get("contiguous") is False:
                raise CheckFailure(f"output {i} is a non-contiguous view while the reference's output is contiguous: "
                                   "a view (.t(), .permute()) would leave the layout change to the caller; store the "
                                   "result in the reference's layout in the kernel.")
        if planned.get("repeat"):
            self.check_repeat(outputs, record.get("repeat"), blob)

    @staticmethod
    def check_repeat(first: list[torch.Tensor], repeat: Any, blob: BlobReader) -> None:
        if not isinstance(repeat, list) or len(repeat) != len(first):
            raise CheckFailure("a second run on identical inputs returned a different number of outputs.")
        for i, (a, entry) in enumerate(zip(first, repeat)):
            if entry.get("same_buffer"):
                raise CheckFailure(f"output {i} is the same buffer on two calls (a cached output); allocate a "
                                   "fresh output in launch on every call.")
            b = output_tensor(entry, blob)
            same_layout = a.shape == b.shape and a.dtype == b.dtype
            if same_layout and torch.equal(a.reshape(-1).view(torch.uint8) if a.dtype != torch.bool else a,
                                           b.reshape(-1).view(torch.uint8) if b.dtype != torch.bool else b):
                continue
            detail = "its shape or dtype changes"
            if same_layout:
                differ = ~torch.eq(a, b) & ~(torch.isnan(a) & torch.isnan(b)) if a.is_floating_point() else a != b
                detail = f"{int(differ.sum())} of {a.numel()} elements change"
            raise CheckFailure(f"nondeterministic: a second run on identical inputs changes output {i} "
                               f"({detail}); results must not depend on call count, state or timing.")
