"""Tables of a dataset's fidelity: per dataset and per op kind, the worst rows with their breakdown."""

from __future__ import annotations

import math
from collections import defaultdict

from .dataset import Dataset
from .predict import Prediction
from .stats import Summary, summarize

HEADER = ("| {group} | n | geomean error | median pred/meas | within ±25% | within 2x | Spearman | worst |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|")


def summaries(preds: list[Prediction]) -> dict[str, Summary]:
    """``{"all": ..., <kind>: ...}`` for *preds*."""
    groups: dict[str, list[Prediction]] = defaultdict(list)
    for p in preds:
        groups[p.row.kind].append(p)
    out = {"all": _summary(preds)}
    for kind in sorted(groups):
        out[kind] = _summary(groups[kind])
    return out


def _summary(preds: list[Prediction]) -> Summary:
    return summarize([p.predicted_ms for p in preds], [p.row.measured_ms for p in preds],
                     [p.row.weight for p in preds])


def _fmt(v: float, spec: str) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def summary_row(name: str, s: Summary) -> str:
    return (f"| {name} | {s.n} | {_fmt(s.geomean_error, '.2f')}x | {_fmt(s.median_ratio, '.2f')} | "
            f"{_fmt(s.within_25, '.0%')} | {_fmt(s.within_2x, '.0%')} | {_fmt(s.spearman, '.2f')} | "
            f"{_fmt(s.max_error, '.2f')}x |")


def summary_table(groups: dict[str, Summary], label: str = "op kind") -> str:
    lines = [HEADER.format(group=label)]
    lines += [summary_row(f"**{k}**" if k == "all" else k, s) for k, s in groups.items()]
    return "\n".join(lines)


def worst_table(preds: list[Prediction], count: int = 10) -> str:
    ranked = sorted(preds, key=lambda p: abs(math.log(p.ratio)), reverse=True)[:count]
    lines = ["| row | kind | predicted | measured | pred/meas | the model's breakdown |", "|---|---|---:|---:|---:|---|"]
    for p in ranked:
        parts = "; ".join(p.breakdown[:4]) + ("; ..." if len(p.breakdown) > 4 else "")
        lines.append(f"| {p.row.id} | {p.row.kind} | {fmt_ms(p.predicted_ms)} | {fmt_ms(p.row.measured_ms)} | "
                     f"{p.ratio:.2f} | {parts} |")
    return "\n".join(lines)


def fmt_ms(ms: float) -> str:
    return f"{ms:.3g} ms" if ms >= 0.1 else f"{ms * 1e3:.3g} us"


def dataset_report(dataset: Dataset, hardware: str, preds: list[Prediction], *, worst: int = 10,
                   broken: list[str] | None = None) -> str:
    """The markdown section for one dataset."""
    what = "eager-PyTorch baseline" if dataset.predictor == "eager" else "Triton kernel model"
    out = [f"## {dataset.name}: {what} on {hardware} ({len(preds)} rows, {dataset.timing} timing)", "",
           summary_table(summaries(preds)), "", f"Worst {min(worst, len(preds))}:", "", worst_table(preds, worst)]
    if broken is not None:
        out += ["", "Thresholds: " + ("met." if not broken else "BROKEN: " + "; ".join(broken) + ".")]
    return "\n".join(out)
