"""Measured rows for calibration, from a run store (device runs), a ``bench_elites.py`` CSV or a
fidelity dataset.  Each becomes a :class:`~.fit.Measurement` that re-predicts itself on a changed spec:

* eager rows (a reference and its inputs) and fidelity kernel rows (a trace) run the model itself;
* device-run and CSV kernel rows carry the model's prediction, its bound term and launch part: the
  non-launch time scales with the bound's figure (dram -> ``dram_efficiency``, l2 -> ``l2_tbps``,
  compute-matrix -> ``matrix_efficiency``) and the launch part with ``launch_overhead_us``.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..perfmodel import HardwareSpec
from .fit import Measurement

#: the bench CSV's columns (``bench_elites.py`` writes them; docs/device.md)
CSV_COLUMNS = ("row", "kernel", "hardware", "device", "driver", "torch", "shape", "config", "predicted_s",
               "measured_s", "spread", "bound", "launch_s", "launches", "kind", "reference", "inputs",
               "correct", "date")
BOUND_FIGURE = {"dram": "dram_efficiency", "l2": "l2_tbps", "compute-matrix": "matrix_efficiency"}


class CalibrationError(UserError):
    """A measurement file is missing, malformed, or measured on other hardware."""


def kernel_row(id_: str, kind: str, measured_s: float, predicted_s: float, bound: str, launch_s: float,
               base: HardwareSpec, source: str) -> Measurement:
    """A kernel measurement re-predicted from its stored prediction (see the module docstring)."""
    rest, figure = max(predicted_s - launch_s, 0.0), BOUND_FIGURE.get(bound)

    def predict(spec: HardwareSpec) -> float:
        scale = 1.0 if figure is None else getattr(base, figure) / getattr(spec, figure)
        return rest * scale + launch_s * spec.launch_overhead_us / base.launch_overhead_us
    return Measurement(id_, kind, measured_s, predict, source=source)


def eager_row(id_: str, kind: str, measured_s: float, reference: str, inputs: list, timing: str,
              source: str, weight: float = 1.0) -> Measurement:
    """An eager-PyTorch measurement, re-predicted by the eager baseline itself."""
    from ..perfmodel import TIMINGS, eager_estimate, profile_function
    profile = profile_function(reference, [(n, tuple(s), d) for n, s, d in inputs], name=id_)
    return Measurement(id_, kind, measured_s, lambda spec: eager_estimate(profile, spec, TIMINGS[timing]).seconds,
                       weight=weight, source=source)


def read_rows(path: str | Path, base: HardwareSpec) -> tuple[list[Measurement], str]:
    """(measurements, device label) from one file or run directory measured on *base*'s hardware."""
    p = Path(path)
    if p.is_dir() and (p / "run.sqlite").is_file():
        return _from_store(p / "run.sqlite", base)
    if not p.is_file():
        raise CalibrationError(f"measurements {p}: no such file (give a run directory, its run.sqlite, a "
                               "bench_elites.py CSV or a fidelity dataset .yaml).")
    if p.suffix == ".sqlite":
        return _from_store(p, base)
    if p.suffix == ".csv":
        return _from_csv(p, base)
    if p.suffix in (".yaml", ".yml"):
        return _from_dataset(p, base)
    raise CalibrationError(f"measurements {p}: unknown kind of file (expected a run directory or run.sqlite, "
                           ".csv from bench_elites.py, or a fidelity dataset .yaml).")


def _from_dataset(path: Path, base: HardwareSpec) -> tuple[list[Measurement], str]:
    from ..fidelity import load_dataset
    ds = load_dataset(path)
    if ds.hardware != base.name:
        raise CalibrationError(f"dataset {path} (field 'hardware') was measured on {ds.hardware}; calibrate it "
                               f"with --hardware {ds.hardware}, not {base.name}.")
    rows = []
    if ds.predictor == "eager":
        for r in ds.rows:
            rows.append(eager_row(r.id, r.kind, r.measured_ms * 1e-3, r.reference, list(r.inputs), ds.timing,
                                  str(path), r.weight))
        return rows, f"published: {ds.name}"
    from ..fidelity import get_traces, kernel_prediction
    from ..perfmodel import HardwareArrays, unaligned_bytes
    from ..task import load_task
    for r in ds.rows:
        traces = get_traces(path.parent, r.task, r.kernel, ds.hardware, write=False)[0]
        unaligned = unaligned_bytes(load_task(r.task, check_files=False), r.shape)

        def predict(spec, r=r, traces=traces, unaligned=unaligned):
            return kernel_prediction(r, traces, HardwareArrays([spec]), unaligned).predicted_ms * 1e-3
        rows.append(Measurement(r.id, r.kind, r.measured_ms * 1e-3, predict, weight=r.weight, source=str(path)))
    return rows, f"published: {ds.name}"


def _from_store(path: Path, base: HardwareSpec) -> tuple[list[Measurement], str]:
    from ..fidelity import op_kind
    from ..store import RunStore
    from ..task import task_from_dict
    try:
        store = RunStore(path, create=False)
    except Exception as exc:  # noqa: BLE001 - a damaged file
        raise CalibrationError(f"run store {path} cannot be opened: {exc}.") from None
    with store:
        task = task_from_dict(store.get_meta("task"), check_files=False)
        records = [(r.id, r.measured) for r in store.iter_candidates(passed_only=True) if r.measured]
    kind = op_kind(task)
    rows, devices, other = [], set(), 0
    for cid, rec in records:
        if rec.get("hardware") != base.name:
            other += 1
            continue
        devices.add(str(rec.get("device")))
        for s in rec.get("shapes") or []:
            tag = f"c{cid}@" + ",".join(f"{k}={v}" for k, v in s["shape"].items())
            for c in s.get("configs") or []:
                if isinstance(c.get("measured_s"), (int, float)) and c["measured_s"] > 0:
                    rows.append(kernel_row(f"{tag}:{_key(c['config'])}", kind, c["measured_s"], c["predicted_s"],
                                           c.get("bound", ""), c.get("launch_s", 0.0), base, str(path)))
            inputs = [(spec.name, spec.concrete_shape(s["shape"]), spec.dtype) for spec in task.inputs]
            rows.append(eager_row(f"{tag}:eager", kind, s["eager_measured_s"], task.reference, inputs, "do_bench",
                                  str(path)))
    if not rows:
        raise CalibrationError(f"run store {path}: no device measurements on {base.name} ({len(records)} measured "
                               f"candidates, {other} predicted on other hardware); run evolve --device cuda.")
    return rows, ", ".join(sorted(devices))


def _from_csv(path: Path, base: HardwareSpec) -> tuple[list[Measurement], str]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in ("row", "hardware", "device", "measured_s", "predicted_s") if
                       c not in (reader.fieldnames or [])]
            if missing:
                raise CalibrationError(f"CSV {path}: columns {missing} are missing (bench_elites.py writes "
                                       f"{', '.join(CSV_COLUMNS)}).")
            table = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise CalibrationError(f"CSV {path} cannot be read: {exc}.") from None
    rows, devices = [], set()
    for line, r in enumerate(table, start=2):
        if r["hardware"] != base.name or r.get("correct", "True") != "True" or not r["measured_s"]:
            continue

        def number(col: str) -> float:
            try:
                value = float(r[col])
            except (TypeError, ValueError):
                raise CalibrationError(f"CSV {path}, line {line}, column '{col}': not a number ({r[col]!r}).") from None
            if not math.isfinite(value) or value < 0:
                raise CalibrationError(f"CSV {path}, line {line}, column '{col}': must be finite, >= 0; got {value}.")
            return value
        devices.add(r["device"])
        id_ = f"{r.get('kernel')}@{r.get('shape')}:{r.get('config') or 'eager'}"
        if r["row"] == "kernel":
            rows.append(kernel_row(id_, r.get("kind") or "kernel", number("measured_s"), number("predicted_s"),
                                   r.get("bound", ""), number("launch_s"), base, str(path)))
        elif r["row"] == "eager":
            try:
                inputs = json.loads(r["inputs"])
            except (TypeError, ValueError):
                raise CalibrationError(f"CSV {path}, line {line}, column 'inputs': not JSON.") from None
            rows.append(eager_row(id_, r.get("kind") or "eager", number("measured_s"), r["reference"], inputs,
                                  "do_bench", str(path)))
        else:
            raise CalibrationError(f"CSV {path}, line {line}, column 'row': 'kernel' or 'eager'; got {r['row']!r}.")
    if not rows:
        raise CalibrationError(f"CSV {path}: no correct measurements on {base.name} (its rows name other hardware, "
                               f"or none passed the device check).")
    return rows, ", ".join(sorted(devices))


def _key(config: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in config.items())
