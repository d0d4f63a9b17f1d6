"""Model-gate plausibility checks: work the trace cannot have missed.

The trace runs a few programs of each launch and a few trips of each loop, so a
kernel could try to hide work from it: in programs the sample skips, in loop trips
it does not sample, in scratch buffers, only at check shapes.  Three checks, all in
the judge, catch what any of these leaves behind:

- **Output coverage**: at every target shape and config, the distinct bytes stored
  into *each returned output* (scaled to all programs; stores into scratch buffers
  do not count) must cover 90% of that output's bytes.
- **Input coverage**: every input the reference reads densely (probed at a check
  shape: changing any element changes the output) must be loaded, by the traced
  programs' footprints extrapolated to the whole grid, to 90% of its bytes.
- **Speed of light**: no hardware may be predicted faster than 105% of its speed of
  light (the larger of the compulsory-traffic and compute bounds of the reference).

An honest kernel stores and loads all of it (every program its share; sampling error is
a few percent at most, from partial tail tiles); a kernel that leaves work to programs
the sample rarely picks (a few heavy programs among light ones) falls short.
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from ...task import Task
from ...records import ConfigTrace
from ..trace.counts import loaded_input_bytes, stored_output_bytes

MIN_OUTPUT_COVERAGE = 0.9
MIN_INPUT_COVERAGE = 0.9
MAX_SOL_FRACTION = 1.05
#: Elements perturbed per input when probing which inputs the reference reads densely.
PROBES = 24
DENSE = 0.9


def _shape_text(env: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in env.items()) + "}"


def _config_text(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items()) or "default"


_SIZES: dict[tuple, tuple[int, ...]] = {}
_DENSE: dict[tuple, frozenset[int]] = {}


def _task_key(task: Task) -> tuple:
    return (task.name, task.reference, repr(task.inputs), repr(task.check_shapes))


def output_sizes(task: Task, env: dict[str, int]) -> tuple[int, ...]:
    """Bytes of each output of the reference at a shape (a meta-device run; trusted task code; cached)."""
    key = (_task_key(task), tuple(sorted(env.items())))
    if key not in _SIZES:
        _SIZES[key] = _output_sizes(task, env)
    return _SIZES[key]


def _output_sizes(task: Task, env: dict[str, int]) -> tuple[int, ...]:
    from .correctness import load_reference
    from ...harness.inputs import TORCH_DTYPES
    args = [torch.empty(s.concrete_shape(env), dtype=TORCH_DTYPES[s.dtype], device="meta") for s in task.inputs]
    try:
        out = load_reference(task)(*args)
    except Exception:  # noqa: BLE001 - data-dependent references cannot run on meta tensors
        return ()
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    return tuple(t.numel() * t.element_size() for t in items if isinstance(t, torch.Tensor))


def dense_inputs(task: Task) -> frozenset[int]:
    """Indices of float inputs the reference reads densely: at the smallest check shape, changing any
    of :data:`PROBES` random elements (to a large value of either sign) changes the output (cached)."""
    key = _task_key(task)
    if key not in _DENSE:
        _DENSE[key] = _dense_inputs(task)
    return _DENSE[key]


def _dense_inputs(task: Task) -> frozenset[int]:
    from .correctness import load_reference
    from ...harness.inputs import InputFactory
    if not task.check_shapes:
        return frozenset()
    env = min(task.check_shapes, key=lambda e: task.input_bytes(e))
    inputs = InputFactory(task, 0).make(env, "normal", call=1)
    reference = load_reference(task)
    try:
        base = [t.clone() for t in _outputs(reference(*[t.clone() for t in inputs]))]
    except Exception:  # noqa: BLE001 - an unusual reference: no dense-read claims
        return frozenset()
    rng = random.Random(0)
    dense = set()
    for i, (spec, tensor) in enumerate(zip(task.inputs, inputs)):
        if not spec.is_float or tensor.numel() < PROBES:
            continue
        changed = 0
        for index in rng.sample(range(tensor.numel()), PROBES):
            for value in (1e4, -1e4):
                probe = [t.clone() for t in inputs]
                probe[i].view(-1)[index] = value
                try:
                    outs = _outputs(reference(*probe))
                except Exception:  # noqa: BLE001
                    return frozenset()
                if any(not torch.equal(a, b) and not (torch.isnan(a).any() and torch.isnan(b).any()
                                                      and torch.equal(a.isnan(), b.isnan()))
                       for a, b in zip(outs, base)):
                    changed += 1
                    break
        if changed >= DENSE * PROBES:
            dense.add(i)
    return frozenset(dense)


def _outputs(value: Any) -> list[torch.Tensor]:
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    return [t for t in items if isinstance(t, torch.Tensor)]


def implausible_traces(task: Task, traces: list[ConfigTrace]) -> str | None:
    """Why the traces cannot be those of an honest kernel doing the task's work; None if they can."""
    dense = dense_inputs(task)
    for trace in traces:
        where = f"at shape {_shape_text(trace.shape)} with config {_config_text(trace.config)}"
        sizes = output_sizes(task, trace.shape)
        stored = stored_output_bytes(trace)
        for j, need in enumerate(sizes):
            got = stored.get(f"output:{j}", 0.0)
            if need > 0 and got < MIN_OUTPUT_COVERAGE * need:
                return (f"{where} the traced programs store {got:.3g} distinct bytes into output {j}, "
                        f"{got / need:.1%} of its {need:.3g} bytes: the trace samples a few programs and loop "
                        "trips, so the work must be spread evenly over them, and every output must be written "
                        "by the kernels (stores into other buffers do not count). Every program and every loop "
                        "trip should do its share, whatever the input values and shapes.")
        loaded = loaded_input_bytes(trace)
        for i in sorted(dense):
            spec = task.inputs[i]
            need = math.prod(spec.concrete_shape(trace.shape)) * torch.empty((), dtype=_dtype(spec.dtype)).element_size()
            got = loaded.get(f"input:{i}", 0.0)
            if need > 0 and got < MIN_INPUT_COVERAGE * need:
                return (f"{where} the traced programs load about {got:.3g} distinct bytes of input "
                        f"'{spec.name}', {got / need:.1%} of its {need:.3g} bytes, though every element of it "
                        "affects the result: the trace samples a few programs and loop trips, so every program "
                        "and trip must do its share of the reading.")
    return None


def _dtype(name: str) -> torch.dtype:
    from ...harness.inputs import TORCH_DTYPES
    return TORCH_DTYPES[name]


def implausible_scores(hardware: dict[str, Any]) -> str | None:
    """Why the model's scores are impossible (faster than speed of light); None if they are not."""
    for name, score in hardware.items():
        fraction = float(getattr(score, "sol_fraction", 0.0) or 0.0)
        if fraction > MAX_SOL_FRACTION:
            return (f"the model predicts {fraction:.0%} of {name}'s speed of light, which no kernel can reach: "
                    "the trace missed work (done in programs or loop trips it did not sample).")
    return None
