"""Tables of a dataset's fidelity: per dataset and per op kind, the worst rows with their breakdown."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from .dataset import Dataset
from .predict import Prediction
from .error_stats import Summary, summarize

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


HELD_HEADER = ("| op kind | n | geomean error in-sample | held-out | 80th pct \\|error\\| in-sample | held-out | "
               "within ±25% in-sample | held-out |\n|---|---:|---:|---:|---:|---:|---:|---:|")
METHODS = {"leave-family-out": "each problem family predicted by constants refitted without it",
           "leave-GPU-out": "this GPU's fitted figures at their priors: the model on a GPU nobody measured",
           "not fitted on": "no constant was fitted on these rows"}


def held_out_table(preds: list[Prediction], held_ms: list[float]) -> str:
    """In-sample and held-out error side by side, per op kind (the held-out figures are the bands)."""
    groups: dict[str, list[int]] = {"all": list(range(len(preds)))}
    for i, p in enumerate(preds):
        groups.setdefault(p.row.kind, []).append(i)
    lines = [HELD_HEADER]
    for kind in ["all"] + sorted(k for k in groups if k != "all"):
        idx = groups[kind]
        m = [preds[i].row.measured_ms for i in idx]
        w = [preds[i].row.weight for i in idx]
        ins = summarize([preds[i].predicted_ms for i in idx], m, w)
        out = summarize([held_ms[i] for i in idx], m, w)
        p80 = [float(np.percentile([abs(v / mm - 1.0) * 100 for v, mm in zip(vals, m)], 80))
               for vals in ([preds[i].predicted_ms for i in idx], [held_ms[i] for i in idx])]
        name = f"**{kind}**" if kind == "all" else kind
        lines.append(f"| {name} | {len(idx)} | {ins.geomean_error:.2f}x | {out.geomean_error:.2f}x | {p80[0]:.0f}% | "
                     f"{p80[1]:.0f}% | {ins.within_25:.0%} | {out.within_25:.0%} |")
    return "\n".join(lines)


def dataset_report(dataset: Dataset, hardware: str, preds: list[Prediction], *, worst: int = 10,
                   broken: list[str] | None = None, held=None) -> str:
    """The markdown section for one dataset (*held*: its :class:`~.crossval.HeldOut`)."""
    what = "eager-PyTorch baseline" if dataset.predictor == "eager" else "Triton kernel model"
    numbers = f"{dataset.timing} timing" if dataset.measured else "ESTIMATES of another model, not measurements"
    out = [f"## {dataset.name}: {what} on {hardware} ({len(preds)} rows, {numbers})", "",
           "In-sample (the shipped model, whose constants were fitted on these rows where any were):", "",
           summary_table(summaries(preds))]
    if held is not None:
        bands = ("the error bands quote the held-out 80th percentile" if dataset.measured else
                 "no error band is made of estimates")
        out += ["", f"In-sample vs held-out ({held.method}: {METHODS.get(held.method, held.method)}; {bands}):", "",
                held_out_table(preds, held.predicted_ms)]
    out += ["", f"Worst {min(worst, len(preds))}:", "", worst_table(preds, worst)]
    if broken is not None:
        out += ["", "Thresholds: " + ("met." if not broken else "BROKEN: " + "; ".join(broken) + ".")]
    return "\n".join(out)
