"""The model's measured error band for an op kind on a hardware: what the user-facing outputs quote.

``bands.yaml`` (beside this module) is a small table computed from the fidelity datasets by
``python -m kernelfoundry.fidelity experiments/fidelity/* --write-bands``: per predictor
(``kernel``: the Triton kernel model; ``eager``: the eager-PyTorch baseline), op kind and
hardware, the number of published measurements and the 80th percentile of |predicted /
measured - 1| (so four in five rows were closer).  :func:`error_band` looks up the best match:
the kind on that hardware, else the kind on any measured hardware, else all kinds.
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
    """One band: ``pct`` (80th-percentile |error| in percent) over ``n`` measurements."""

    predictor: str          # "kernel" | "eager"
    kind: str               # the op kind the band is for ("all" for the fallback)
    hardware: str           # the hardware asked about
    measured_on: str        # the hardware the measurements come from
    n: int
    pct: float
    median_pct: float

    @property
    def exact(self) -> bool:
        return self.kind != "all" and self.measured_on == self.hardware

    def text(self) -> str:
        """e.g. "model error on published measurements of normalizations: ±18%" (with the hardware when it differs)."""
        where = "" if self.measured_on == self.hardware else f", measured on {self.measured_on}"
        return (f"model error on {self.n} published measurements of {LABELS.get(self.kind, self.kind)}{where}: "
                f"±{self.pct:.0f}%")


@functools.lru_cache(maxsize=4)
def load_bands(path: Path = BANDS_PATH) -> tuple[dict, ...]:
    """The band table (empty when the file is missing)."""
    if not path.is_file():
        return ()
    data = yaml.safe_load(path.read_text()) or {}
    return tuple(data.get("bands", []))


def error_band(task_or_kind: Task | str, hardware_name: str, *, predictor: str = "kernel") -> ErrorBand | None:
    """The measured error band for a task (or an op kind) on *hardware_name*; None when no data fits."""
    kind = _kind(task_or_kind)
    rows = [b for b in load_bands() if b["predictor"] == predictor]
    for want_kind, same_hw in ((kind, True), (kind, False), ("all", True), ("all", False)):
        match = [b for b in rows if b["kind"] == want_kind and (b["hardware"] == hardware_name or not same_hw)]
        if match:
            best = max(match, key=lambda b: b["n"])
            return ErrorBand(predictor, want_kind, hardware_name, best["hardware"], int(best["n"]),
                             float(best["p80_pct"]), float(best["median_pct"]))
    return None


def _kind(task_or_kind: Task | str) -> str:
    if isinstance(task_or_kind, str):
        return task_or_kind
    from .opkind import op_kind
    return op_kind(task_or_kind)


def band_note(task_or_kind: Task | str, hardware_name: str) -> str:
    """The sentence the outputs append to a predicted number, e.g. "predicted; model error on 11
    published measurements of normalizations: ±9%; eager estimate: ±12% (5 measurements)"."""
    kind = _kind(task_or_kind)
    kernel = error_band(kind, hardware_name, predictor="kernel")
    eager = error_band(kind, hardware_name, predictor="eager")
    parts = ["predicted"]
    parts.append(kernel.text() if kernel else "kernel-model error not measured for this op kind")
    if eager:
        where = "" if eager.measured_on == hardware_name else f" on {eager.measured_on}"
        what = "" if eager.kind == kind else " (all kinds)"
        parts.append(f"eager estimate: ±{eager.pct:.0f}% ({eager.n} measurements{what}{where})")
    return "; ".join(parts)


def model_error_summary(task: Task, hardware_names: list[str]) -> dict:
    """The op kind and, per hardware, the kernel-model and eager-baseline bands (for summary.json)."""
    kind = _kind(task)
    out = {"op_kind": kind, "what": f"{PERCENTILE}th-percentile |predicted / measured - 1| on published "
                                    "measurements (docs/fidelity.md)", "hardware": {}}
    for hw in hardware_names:
        entry = {}
        for predictor in ("kernel", "eager"):
            band = error_band(kind, hw, predictor=predictor)
            if band:
                entry[predictor] = {"pct": band.pct, "n": band.n, "kind": band.kind, "measured_on": band.measured_on}
        entry["note"] = band_note(kind, hw)
        out["hardware"][hw] = entry
    return out


def band_rows(predictor: str, hardware: str, dataset: str, preds) -> list[dict]:
    """Table rows (per kind and "all") for one dataset's predictions."""
    groups: dict[str, list[float]] = {"all": []}
    for p in preds:
        err = abs(p.ratio - 1.0) * 100.0
        groups["all"].append(err)
        groups.setdefault(p.row.kind, []).append(err)
    return [{"predictor": predictor, "kind": kind, "hardware": hardware, "dataset": dataset, "n": len(errs),
             "p80_pct": round(float(np.percentile(errs, PERCENTILE)), 1),
             "median_pct": round(float(np.median(errs)), 1)} for kind, errs in sorted(groups.items())]


def write_bands(results, path: Path = BANDS_PATH) -> Path:
    """Rewrite the table from ``(dataset, hardware, predictions)`` triples."""
    rows = []
    for dataset, hardware, preds in results:
        rows.extend(band_rows(dataset.predictor, hardware, dataset.name, preds))
    head = (f"# The model's measured error per predictor, op kind and hardware (kernelfoundry/fidelity/bands.py).\n"
            f"# Generated {datetime.date.today().isoformat()} by: python -m kernelfoundry.fidelity "
            f"experiments/fidelity/* --write-bands\n# p80_pct: 80th percentile of |predicted / measured - 1| in "
            f"percent; median_pct: the median.  Do not edit by hand.\n")
    path.write_text(head + yaml.safe_dump({"bands": rows}, sort_keys=False, width=120))
    load_bands.cache_clear()
    return path
