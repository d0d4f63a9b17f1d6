"""Held-out error: every dataset row predicted by a model whose fitted constants never saw it.

The in-sample error (``tables.py``) is measured on the rows the constants were fitted on.  The
bands the outputs quote come from here instead (docs/fidelity.md, "Error bands"):

* **leave one family out** (the rows fitted on this GPU): the dataset's rows are grouped into
  problem families (:func:`family`: a Liger kernel, a KernelBench op kind, convolutions split by
  kind and 1-D / 2-D / 3-D).  For each family, every constant fitted on this data (:data:`RULE_KNOBS`
  for the eager rules, :data:`FITTED_FIGURES` for the hardware file) is reset to its prior (a round
  value chosen without the data) and refitted on the *other* families' rows (coordinate descent on
  the weighted squared log error, as ``fidelity.calibrate`` does); the family's rows are then
  predicted with the refitted constants.  A constant that only the held-out family depends on stays
  at its prior.
* **leave the GPU out** (rows of a GPU no constant was fitted on): the GPU's own fitted figures go
  back to their priors and everything else stays as shipped (fitted on other GPUs); that is the
  model a user gets on a GPU nobody measured.  Used for eager rows measured on another GPU than the
  rules were fitted on (the A100 PCIe's Liger eager rows).

What cannot be refitted: the rules' structure (which kernels ATen launches, which terms bound them)
was written with every row in view; only the constants are held out.
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..perfmodel import (HardwareSpec, eager_kernels, get_figure, load_hardware, rules_conv, rules_matmul, rules_norm,
                         rules_pointwise, rules_reduce, with_figures)
from .dataset import Dataset, Row


@dataclass(frozen=True)
class Knob:
    """A fitted constant: a module attribute (float or tuple) or a hardware-file figure."""

    name: str
    prior: tuple[float, ...]            # the value a fold starts from (and keeps without data)
    caps: tuple[float, ...]             # upper bound per component (efficiencies <= 1)
    module: object | None = None        # None: a figure of the hardware file (calibrate.fit's names)
    attr: str = ""

    def current(self, spec: HardwareSpec) -> tuple[float, ...]:
        if self.module is None:
            return (get_figure(spec, self.name),)
        value = getattr(self.module, self.attr)
        return tuple(value) if isinstance(value, tuple) else (float(value),)


def _rule(module, attr: str, prior, caps) -> Knob:
    as_tuple = lambda v: tuple(float(x) for x in (v if isinstance(v, tuple) else (v,)))  # noqa: E731
    return Knob(f"{module.__name__.rsplit('.', 1)[-1]}.{attr}", as_tuple(prior), as_tuple(caps), module, attr)


INF = math.inf
#: The eager rules' fitted constants (each module says which rows it was fitted on) and their
#: priors: round values that do not come from the measurements (1.0 for "no correction").
RULE_KNOBS = (
    _rule(rules_conv, "CONV_TC", (0.5, 100.0, 32.0), (1.0, INF, INF)),
    _rule(rules_conv, "CONV_T_TC", (0.5, 100.0, 32.0), (1.0, INF, INF)),
    _rule(rules_conv, "CONV_FFMA", (0.5, 16.0), (1.0, INF)),
    _rule(rules_conv, "WINDOW_LANES_PER_TAP", 32.0, INF),
    _rule(rules_conv, "DW_GENERIC_LANES", (256.0, 16.0), (INF, INF)),
    _rule(rules_pointwise, "STRIDED_FACTOR", 1.0, 1.0),
    _rule(eager_kernels, "ROUND_TRIP_DRAM_LATENCIES", 1.0, INF),
    _rule(rules_reduce, "SCAN_BARRIER_ROUNDS", 0.1, INF),
    _rule(rules_norm, "WELFORD_EFF", 1.0, 1.0),
    _rule(rules_norm, "BN_STATS_BYTES_PER_THREAD", 16.0, INF),
    _rule(rules_matmul, "UNALIGNED_GEMM_EFF", 1.0, 1.0),
)
#: Per hardware file, the figures fitted on a dataset measured on it, and their priors.
FITTED_FIGURES: dict[str, dict[str, float]] = {
    "h100": {"library_efficiency.gemm": 1.0, "library_efficiency.elementwise": 1.0,
             "library_efficiency.reduction": 1.0},
    "a100-pcie": {"dram_efficiency": 0.85, "launch_overhead_us": 4.0},
}
#: Datasets whose eager rules were fitted on them (the rule constants are held out per family).
RULES_FITTED_ON = ("kernelbench_h100",)
#: Datasets measured on a GPU whose figures were fitted on other rows (another benchmark, machine and
#: day) that no constant or figure ever saw: the shipped model's error on them is held out as it
#: stands ("not fitted on"), and they are no cross-GPU rows (their GPU's figures were fitted).
#: The nvmmh_* rows are runtime estimates of NVIDIA's matmul heuristics (import_nvmatmul_heuristics.py),
#: never fitted on either (and never in a band: ``origin: estimate``).
NEVER_FITTED = ("triton_tutorial_a100", "triton_tutorial_a100_eager", "nvmmh_h100", "nvmmh_a100", "nvmmh_h200")
STEPS = (0.5, 0.7, 0.85, 0.93, 1.07, 1.18, 1.4, 2.0)


def figure_knobs(hardware: str) -> tuple[Knob, ...]:
    caps = {"launch_overhead_us": INF, "l2_tbps": INF, "eager_op_overhead_us": INF}
    return tuple(Knob(n, (p,), (caps.get(n, 1.0),)) for n, p in FITTED_FIGURES.get(hardware, {}).items())


def family(row: Row) -> str:
    """The row's problem family: the Liger kernel ("rms_norm"), else the op kind, convolutions
    split by dimensionality ("conv-transposed 3D")."""
    if "/" in row.id:
        return row.id.split("/", 1)[0]
    if row.kind.startswith("conv"):
        m = re.search(r"_([123])D", row.id)
        if m:
            return f"{row.kind} {m.group(1)}D"
    return row.kind


@contextlib.contextmanager
def applied(knobs, values: dict[str, tuple[float, ...]], spec: HardwareSpec):
    """Set the module knobs to *values* (restored on exit); yields *spec* with the figure knobs set."""
    saved = {k.name: getattr(k.module, k.attr) for k in knobs if k.module is not None}
    figures = {}
    try:
        for k in knobs:
            if k.name not in values:
                continue
            v = values[k.name]
            if k.module is None:
                figures[k.name] = v[0]
            else:
                setattr(k.module, k.attr, tuple(v) if len(k.prior) > 1 else v[0])
        yield with_figures(spec, figures) if figures else spec
    finally:
        for k in knobs:
            if k.module is not None:
                setattr(k.module, k.attr, saved[k.name])


@dataclass
class HeldOut:
    """One dataset's held-out predictions."""

    dataset: str
    predictor: str
    hardware: str
    method: str                                     # "leave-family-out" | "leave-GPU-out" | "none"
    families: list[str]                             # per row
    predicted_ms: list[float]                       # per row, from the fold that held the row out
    refits: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)   # fold -> knob values
    gpu_out_ms: list[float] = field(default_factory=list)  # per row, the GPU's fitted figures at their priors
                                                           # (empty where the rules were fitted on these rows)

    def ratios(self, rows: list[Row]) -> list[float]:
        return [p / r.measured_ms for p, r in zip(self.predicted_ms, rows)]


def _loss(models, rows, idx, spec_values, knobs, spec) -> float:
    if not idx:
        return 0.0
    with applied(knobs, spec_values, spec) as s:
        errs = [math.log(max(models[i](s), 1e-12) / rows[i].measured_ms) ** 2 for i in idx]
    w = [rows[i].weight for i in idx]
    return float(np.average(errs, weights=w))


def dependents(models, rows, knobs, spec) -> dict[str, set[int]]:
    """Per knob, the rows whose prediction moves when the knob does (a 25% nudge of each component)."""
    base_values = {k.name: k.current(spec) for k in knobs}
    with applied(knobs, base_values, spec) as s:
        base = [models[i](s) for i in range(len(rows))]
    out = {}
    for k in knobs:
        moved = set()
        for j in range(len(k.prior)):
            v = list(base_values[k.name])
            v[j] = v[j] * 0.8
            with applied(knobs, {**base_values, k.name: tuple(v)}, spec) as s:
                moved |= {i for i in range(len(rows)) if abs(models[i](s) / base[i] - 1.0) > 1e-9}
        out[k.name] = moved
    return out


def refit(models, rows, train: list[int], knobs, deps, spec, sweeps: int = 3) -> dict[str, tuple[float, ...]]:
    """Knob values fitted on the *train* rows, from the priors (coordinate descent, multiplicative steps)."""
    values = {k.name: tuple(k.prior) for k in knobs}
    train_set = set(train)
    for _ in range(sweeps):
        for k in knobs:
            idx = sorted(deps[k.name] & train_set)
            if not idx:
                continue
            best = _loss(models, rows, idx, values, knobs, spec)
            for j in range(len(k.prior)):
                for step in STEPS:
                    trial = list(values[k.name])
                    trial[j] = min(trial[j] * step, k.caps[j])
                    cand = {**values, k.name: tuple(trial)}
                    err = _loss(models, rows, idx, cand, knobs, spec)
                    if err < best - 1e-12:
                        best, values = err, cand
    return values


def held_out(dataset: Dataset, models: list[Callable[[HardwareSpec], float]], hardware: str | None = None,
             *, sweeps: int = 3) -> HeldOut:
    """Held-out predictions (ms) of every row of *dataset*; *models* predict each row (ms) on a spec."""
    hardware = hardware or dataset.hardware
    spec = load_hardware(hardware)
    rows = list(dataset.rows)
    fams = [family(r) for r in rows]
    rule_knobs = RULE_KNOBS if dataset.predictor == "eager" and dataset.name in RULES_FITTED_ON else ()
    knobs = tuple(rule_knobs) + figure_knobs(hardware)
    shipped = {k.name: k.current(spec) for k in knobs}
    if not knobs or dataset.name in NEVER_FITTED:
        preds = [m(spec) for m in models]     # nothing was fitted on these rows: in-sample is held out
        return HeldOut(dataset.name, dataset.predictor, hardware, "not fitted on", fams, preds, {},
                       preds if not knobs else [])
    gpu_out = []
    if not rule_knobs and figure_knobs(hardware):
        # nothing but this GPU's own figures was fitted on these rows: the model on a GPU nobody measured
        priors = {**shipped, **{k.name: k.prior for k in figure_knobs(hardware)}}
        with applied(knobs, priors, spec) as s:
            gpu_out = [m(s) for m in models]
        if dataset.predictor == "eager":   # these rows never fed the figures (fitted on kernel rows): GPU out
            return HeldOut(dataset.name, dataset.predictor, hardware, "leave-GPU-out", fams, gpu_out,
                           {"gpu": priors}, gpu_out)
    deps = dependents(models, rows, knobs, spec)
    preds = [math.nan] * len(rows)
    refits = {}
    for fam in sorted(set(fams)):
        test = [i for i, f in enumerate(fams) if f == fam]
        train = [i for i, f in enumerate(fams) if f != fam]
        values = refit(models, rows, train, knobs, deps, spec, sweeps)
        refits[fam] = values
        with applied(knobs, values, spec) as s:
            for i in test:
                preds[i] = models[i](s)
    return HeldOut(dataset.name, dataset.predictor, hardware, "leave-family-out", fams, preds, refits, gpu_out)
