"""The model's error band for an op kind on a hardware: what the user-facing outputs quote.

``bands.yaml`` (beside this module) is computed from the fidelity datasets by
``python -m kernelfoundry.fidelity experiments/fidelity/* --write-bands``: per predictor
(``kernel``: the Triton kernel model; ``eager``: the eager-PyTorch baseline), dataset, op kind and
hardware, the number of published measurements and the 80th percentile of |predicted / measured - 1|
of the rows **held out** of the fit (``crossval.py``: leave one problem family out, or the whole
GPU), with the in-sample figure beside it.  ``cross_gpu`` holds, per predictor, the error on rows of
a GPU no constant was fitted on.

:func:`error_band` never borrows: the band is the kind's own, on that hardware, or on another GPU
of the same hardware family (vendor and kind: NVIDIA GPUs) widened to at least the largest
cross-GPU error measured on that family; a kind or a hardware family with no measurements is
"unvalidated".
"""

from __future__ import annotations

import datetime
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from ..task import Task
from .opkind import LABELS

BANDS_PATH = Path(__file__).with_name("bands.yaml")
#: Percentile of |error| quoted as the band.
PERCENTILE = 80


@dataclass(frozen=True)
class ErrorBand:
    """One band: ``pct`` (80th-percentile held-out |error| in percent) over ``n`` measurements;
    ``validated`` False (and ``pct`` None) when nothing of the kind was measured on that hardware family."""

    predictor: str          # "kernel" | "eager"
    kind: str               # the op kind the band is for
    hardware: str           # the hardware asked about
    measured_on: str        # the hardware the measurements come from ("" when unvalidated)
    n: int
    pct: float | None       # held-out 80th percentile |error| (widened to the cross-GPU error off the measured GPU)
    median_pct: float | None = None
    in_sample_pct: float | None = None
    kind_pct: float | None = None       # the kind's own held-out figure on measured_on
    cross_gpu_pct: float | None = None  # the widening, when measured_on != hardware
    cross_gpu_n: int = 0
    method: str = ""                    # how the rows were held out

    @property
    def validated(self) -> bool:
        return self.pct is not None

    @property
    def exact(self) -> bool:
        return self.validated and self.measured_on == self.hardware

    def what(self) -> str:
        return LABELS.get(self.kind, self.kind)

    def unvalidated_text(self) -> str:
        return f"no published measurements of {self.what()} on {self.hardware}: unvalidated"

    def detail(self) -> str:
        """e.g. "80th percentile |error| of 11 held-out measurements of normalizations; in-sample ±11%"."""
        if self.exact:
            text = f"80th percentile |error| of {self.n} held-out measurements of {self.what()}"
        else:
            text = (f"none measured on {self.hardware}: 80th percentile |error| of {self.n} held-out measurements of "
                    f"{self.what()} on {self.measured_on} ±{self.kind_pct:.0f}%, at least the ±{self.cross_gpu_pct:.0f}% "
                    f"of {self.cross_gpu_n} rows on a GPU held out of every fit")
        if self.in_sample_pct is not None:
            text += f"; in-sample ±{self.in_sample_pct:.0f}%"
        return text

    def text(self) -> str:
        """The kernel-model sentence: "model error on h100: ±12% (80th percentile ...)" or "... unvalidated"."""
        if not self.validated:
            return f"model error on {self.hardware}: {self.unvalidated_text()}"
        return f"model error on {self.hardware}: ±{self.pct:.0f}% ({self.detail()})"


@functools.lru_cache(maxsize=4)
def load_table(path: Path = BANDS_PATH) -> dict:
    """The band table (empty when the file is missing)."""
    if not path.is_file():
        return {}
    return yaml.safe_load(path.read_text()) or {}


def load_bands(path: Path = BANDS_PATH) -> tuple[dict, ...]:
    return tuple(load_table(path).get("bands", []))


@functools.lru_cache(maxsize=64)
def hardware_family(name: str) -> tuple[str, str] | None:
    """(vendor, kind) of a hardware library entry, e.g. ("nvidia", "gpu"); None when it cannot be loaded."""
    from ..perfmodel import load_hardware
    try:
        spec = load_hardware(name)
    except Exception:  # noqa: BLE001 - an unknown name or a broken file: no family, so unvalidated
        return None
    return (spec.vendor, spec.kind)


def error_band(task_or_kind: Task | str, hardware_name: str, *, predictor: str = "kernel") -> ErrorBand:
    """The held-out error band for a task (or an op kind) on *hardware_name* (see the module docstring)."""
    kind = _kind(task_or_kind)
    table = load_table()
    rows = [b for b in table.get("bands", []) if b["predictor"] == predictor and b["kind"] == kind]
    family = hardware_family(hardware_name)
    same = [b for b in rows if b["hardware"] == hardware_name]
    if same:
        return _band(predictor, kind, hardware_name, max(same, key=lambda b: b["n"]))
    kin = [b for b in rows if family is not None and hardware_family(b["hardware"]) == family]
    if not kin:
        return ErrorBand(predictor, kind, hardware_name, "", 0, None)
    best = max(kin, key=lambda b: b["n"])
    cross = [c for c in table.get("cross_gpu", []) if c["predictor"] == predictor
             and hardware_family(c["hardware"]) == family]
    if not cross:          # no GPU of the family was ever predicted without its own fit: cannot widen honestly
        return ErrorBand(predictor, kind, hardware_name, "", 0, None)
    c = max(cross, key=lambda b: (float(b["p80_pct"]), b["n"]))   # the family's widest cross-GPU error
    band = _band(predictor, kind, hardware_name, best)
    return ErrorBand(predictor, kind, hardware_name, best["hardware"], band.n, max(band.pct, float(c["p80_pct"])),
                     band.median_pct, band.in_sample_pct, band.pct, float(c["p80_pct"]), int(c["n"]), band.method)


def _band(predictor: str, kind: str, hardware: str, b: dict) -> ErrorBand:
    return ErrorBand(predictor, kind, hardware, b["hardware"], int(b["n"]), float(b["p80_pct"]),
                     float(b["median_pct"]), float(b["in_sample_p80_pct"]), float(b["p80_pct"]),
                     method=b.get("method", ""))


def _kind(task_or_kind: Task | str) -> str:
    if isinstance(task_or_kind, str):
        return task_or_kind
    from .opkind import op_kind
    return op_kind(task_or_kind)


def band_note(task_or_kind: Task | str, hardware_name: str) -> str:
    """The sentence the outputs append to a predicted number, e.g. "predicted; model error on a100-pcie:
    ±12% (80th percentile |error| of 11 held-out measurements of normalizations; in-sample ±11%); eager
    estimate: ±21% (...)", with "no published measurements of <kind> on <hardware>: unvalidated" where so."""
    kind = _kind(task_or_kind)
    kernel = error_band(kind, hardware_name, predictor="kernel")
    eager = error_band(kind, hardware_name, predictor="eager")
    eager_text = (f"±{eager.pct:.0f}% ({eager.detail()})" if eager.validated else eager.unvalidated_text())
    return f"predicted; {kernel.text()}; eager estimate: {eager_text}"


def model_error_summary(task: Task, hardware_names: list[str]) -> dict:
    """The op kind and, per hardware, the kernel-model and eager-baseline bands (for summary.json)."""
    kind = _kind(task)
    out = {"op_kind": kind, "what": f"{PERCENTILE}th-percentile |predicted / measured - 1| on published "
                                    "measurements held out of the fit (docs/fidelity.md)", "hardware": {}}
    for hw in hardware_names:
        entry = {}
        for predictor in ("kernel", "eager"):
            band = error_band(kind, hw, predictor=predictor)
            entry[predictor] = ({"pct": band.pct, "n": band.n, "kind": band.kind, "measured_on": band.measured_on,
                                 "in_sample_pct": band.in_sample_pct, "held_out": band.method}
                                if band.validated else {"kind": band.kind, "unvalidated": True})
        entry["note"] = band_note(kind, hw)
        out["hardware"][hw] = entry
    return out


def _p(errs, q) -> float:
    return round(float(np.percentile(errs, q)), 1)


def band_rows(predictor: str, hardware: str, dataset: str, preds, held_ms: list[float], method: str) -> list[dict]:
    """Table rows (per kind and "all") for one dataset: held-out and in-sample |error| percentiles."""
    groups: dict[str, list[tuple[float, float]]] = {"all": []}
    for p, h in zip(preds, held_ms):
        pair = (abs(h / p.row.measured_ms - 1.0) * 100.0, abs(p.ratio - 1.0) * 100.0)
        groups["all"].append(pair)
        groups.setdefault(p.row.kind, []).append(pair)
    out = []
    for kind, pairs in sorted(groups.items()):
        held, ins = [a for a, _ in pairs], [b for _, b in pairs]
        out.append({"predictor": predictor, "kind": kind, "hardware": hardware, "dataset": dataset, "n": len(pairs),
                    "method": method, "p80_pct": _p(held, PERCENTILE), "median_pct": _p(held, 50),
                    "in_sample_p80_pct": _p(ins, PERCENTILE), "in_sample_median_pct": _p(ins, 50)})
    return out


def cross_gpu_row(predictor: str, hardware: str, dataset: str, measured_ms: list[float], gpu_out_ms: list[float]) -> dict:
    """The error on a GPU predicted without any figure fitted on it (all kinds of the dataset together)."""
    errs = [abs(p / m - 1.0) * 100.0 for p, m in zip(gpu_out_ms, measured_ms)]
    return {"predictor": predictor, "hardware": hardware, "dataset": dataset, "n": len(errs),
            "p80_pct": _p(errs, PERCENTILE), "median_pct": _p(errs, 50)}


def table_from(results) -> dict:
    """The table from ``(dataset, hardware, predictions, HeldOut)`` tuples; datasets of estimates (another
    model's runtimes, ``origin: estimate``) are left out: a band is an error against measurements."""
    bands, cross = [], []
    for dataset, hardware, preds, ho in results:
        if not dataset.measured:
            continue
        bands.extend(band_rows(dataset.predictor, hardware, dataset.name, preds, ho.predicted_ms, ho.method))
        if ho.gpu_out_ms:
            cross.append(cross_gpu_row(dataset.predictor, hardware, dataset.name,
                                       [p.row.measured_ms for p in preds], ho.gpu_out_ms))
    return {"bands": bands, "cross_gpu": cross}


def write_bands(results, path: Path = BANDS_PATH) -> Path:
    """Rewrite the table from ``(dataset, hardware, predictions, HeldOut)`` tuples."""
    head = (f"# The model's error per predictor, op kind and hardware (kernelfoundry/fidelity/bands.py).\n"
            f"# Generated {datetime.date.today().isoformat()} by: python -m kernelfoundry.fidelity "
            f"experiments/fidelity/* --write-bands\n# p80_pct / median_pct: 80th percentile / median of "
            f"|predicted / measured - 1| in percent on rows held out of the fit (method: crossval.py);\n"
            f"# in_sample_*: the same on the shipped model, fitted on these rows.  cross_gpu: rows of a GPU no "
            f"figure was fitted on.  Do not edit by hand.\n")
    path.write_text(head + yaml.safe_dump(table_from(results), sort_keys=False, width=120))
    load_table.cache_clear()
    return path
