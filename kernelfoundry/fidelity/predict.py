"""Predict every row of a dataset with the model, keeping the breakdown behind each number."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..candidate import HINT_PARAMS
from ..records import ConfigTrace
from ..perfmodel import (BOUNDS, HINT_DEFAULTS, TIMINGS, HardwareArrays, compiled_arrays, eager_estimate, evaluate,
                         launch_features, load_hardware, profile_function, sum_launches, unaligned_bytes)
from ..task import load_task
from .dataset import Dataset, FidelityError, Row
from .traces import get_traces


@dataclass
class Prediction:
    """The model's number for one row, and why."""

    row: Row
    predicted_ms: float
    bound: str = ""
    breakdown: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.predicted_ms / self.row.measured_ms


def predict_dataset(dataset: Dataset, hardware: str | None = None, *, refresh_traces: bool = False,
                    write_traces: bool = True, compiled: bool = False) -> list[Prediction]:
    """Predictions for every row of *dataset* on *hardware* (default: the dataset's own).

    ``compiled=True``: kernel rows use the compiler's registers, shared memory and spills for the
    row's config (compiled ahead of time for the hardware's Triton target; cached) instead of the
    model's estimates.
    """
    spec = load_hardware(hardware or dataset.hardware)
    if dataset.predictor == "eager":
        timing = TIMINGS[dataset.timing]
        out = []
        for row in dataset.rows:
            est = eager_estimate(profile_function(row.reference, list(row.inputs), name=row.id), spec, timing)
            slowest = max((k for _, ks in est.ops for k in ks), key=lambda ks: ks[1], default=None)
            out.append(Prediction(row, est.seconds * 1e3, bound=slowest[0].name if slowest else "",
                                  breakdown=est.breakdown()))
        return out
    hw = HardwareArrays([spec])
    cache: dict[tuple, list[ConfigTrace]] = {}
    out = []
    for row in dataset.rows:
        key = (row.task, row.kernel)
        if key not in cache:
            cache[key] = _traces(dataset, row, refresh=refresh_traces, write=write_traces)
        task = load_task(row.task, check_files=False)
        out.append(kernel_prediction(row, cache[key], hw, unaligned_bytes(task, row.shape),
                                      spec.name if compiled else None))
    return out


_TRACES: dict[tuple, list[ConfigTrace]] = {}


def _traces(dataset: Dataset, row: Row, *, refresh: bool = False, write: bool = True) -> list[ConfigTrace]:
    """The row's traces (kept for the process: the report and the cross-validation both need them)."""
    key = (dataset.path.parent, row.task, row.kernel, dataset.hardware)
    if refresh or key not in _TRACES:
        _TRACES[key] = get_traces(dataset.path.parent, row.task, row.kernel, dataset.hardware,
                                  refresh=refresh, write=write)[0]
    return _TRACES[key]


def compiled_resources(row: Row, launches: list, hardware: str, config: dict | None = None) -> list[dict | None] | None:
    """The compiler's resources of each launch of *row*'s config (or *config*) on *hardware* (None: no backend)."""
    from ..compiler import compile_candidate
    config = row.config if config is None else config
    sigs = [launch.signature for launch in launches]
    if not all(isinstance(s, dict) and "args" in s for s in sigs):
        return None
    hints = {k: config[k] for k in HINT_PARAMS if k in config}
    report = compile_candidate(row.kernel.read_text(), {"row": [{**s, **hints} for s in sigs]}, [hardware])
    compiled = report.config(hardware, "row")
    if compiled is None or not compiled.ok:
        return None
    return [k.resources.to_dict() if k.resources else None for k in compiled.kernels]


class InvalidConfig(FidelityError):
    """The model finds a row's config invalid on the hardware (it would not compile or launch there)."""


def kernel_prediction(row: Row, traces: list[ConfigTrace], hw: HardwareArrays,
                      unaligned: frozenset[int], compiled_on: str | None = None) -> Prediction:
    """The model's latency for one kernel *row* from its *traces* on the single hardware of *hw*.

    Uses the trace at the row's shape whose kernel params match the row's config, with the config's
    ``num_warps`` and ``num_stages``; *unaligned* is :func:`unaligned_bytes` of the task at that shape.
    An autotuned row (``configs``: the tuner's list, the measurement the fastest of it) is predicted as
    the minimum over its configs that the model finds valid on the hardware (the tuner skips a config
    that does not compile); the breakdown names the config that gave it.
    With *compiled_on* (a hardware name) the compiler's resources of the config feed the model too.
    Raises :class:`FidelityError` when no trace matches a config or the model finds the config (every
    config of an autotuned row) invalid.
    Also used by ``calibrate`` to re-predict published kernel rows with fitted figures.
    """
    if not row.configs:
        return _config_prediction(row, row.config, traces, hw, unaligned, compiled_on)
    best, won, invalid = None, None, 0
    for config in row.configs:
        try:
            pred = _config_prediction(row, config, traces, hw, unaligned, compiled_on)
        except InvalidConfig:
            invalid += 1
            continue
        if best is None or pred.predicted_ms < best.predicted_ms:
            best, won = pred, config
    if best is None:
        raise InvalidConfig(f"row {row.id}: the model finds every one of its {len(row.configs)} configs invalid "
                            f"on {hw.names[0]}.")
    skipped = f", {invalid} invalid on {hw.names[0]}" if invalid else ""
    best.breakdown.insert(0, f"fastest of {len(row.configs)} configs{skipped}: "
                             + ", ".join(f"{k}={v}" for k, v in won.items()))
    return best


def _config_prediction(row: Row, config: dict, traces: list[ConfigTrace], hw: HardwareArrays,
                       unaligned: frozenset[int], compiled_on: str | None) -> Prediction:
    """:func:`kernel_prediction` of *row* run with one *config*."""
    params = {k: v for k, v in config.items() if k not in HINT_PARAMS}
    match = [t for t in traces if t.shape == row.shape and all(t.config.get(k) == v for k, v in params.items())]
    if not match:
        raise FidelityError(f"row {row.id}: no trace of {row.kernel.name} at shape {row.shape} with {params or 'its'} "
                            f"parameters; the shape must be one of the task's target shapes.")
    launches = match[0].launches
    n = len(launches)
    warps = np.full(n, float(config.get("num_warps", HINT_DEFAULTS["num_warps"])))
    stages = np.full(n, float(config.get("num_stages", HINT_DEFAULTS["num_stages"])))
    arrays = None
    if compiled_on is not None:
        resources = compiled_resources(row, launches, compiled_on, config)
        if resources:
            arrays = compiled_arrays({compiled_on: {"row": resources}}, hw, ["row"] * n, np.arange(n))
    out = sum_launches(evaluate(launch_features(launches, unaligned), np.arange(n), warps, stages, hw,
                                compiled=arrays), np.array([0]))
    latency = float(out.latency[0, 0])
    if not np.isfinite(latency):
        raise InvalidConfig(f"row {row.id}: the model finds config {config} invalid on {hw.names[0]}.")
    parts = [f"{k}: {float(v[0, 0]) * 1e6:.1f} us" for k, v in out.components.items() if float(v[0, 0]) > 0]
    return Prediction(row, latency * 1e3, bound=BOUNDS[int(out.bound[0, 0])],
                      breakdown=[f"{n} launch(es)"] + parts)


def row_models(dataset: Dataset, *, write_traces: bool = False):
    """Per row, a function spec -> predicted ms (the model re-run on a changed spec or changed rule
    constants: cross-validation refits them, ``crossval.py``)."""
    if dataset.predictor == "eager":
        timing = TIMINGS[dataset.timing]

        def eager(row: Row):
            profile = profile_function(row.reference, list(row.inputs), name=row.id)
            return lambda spec: eager_estimate(profile, spec, timing).seconds * 1e3
        return [eager(r) for r in dataset.rows]
    cache: dict[tuple, list[ConfigTrace]] = {}
    out = []
    for row in dataset.rows:
        key = (row.task, row.kernel)
        if key not in cache:
            cache[key] = _traces(dataset, row, write=write_traces)
        unaligned = unaligned_bytes(load_task(row.task, check_files=False), row.shape)

        def kernel(spec, row=row, traces=cache[key], unaligned=unaligned):
            return kernel_prediction(row, traces, HardwareArrays([spec]), unaligned).predicted_ms
        out.append(kernel)
    return out
