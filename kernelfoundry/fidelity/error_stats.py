"""Error statistics of predictions against measurements (ratios, not differences).

For ratio r = predicted / measured: the error factor is max(r, 1/r) (2.0 = off by 2x either
way); "within 25%" means |r - 1| <= 0.25 and "within 2x" means 1/2 <= r <= 2.  The geometric
mean of the error factors is the headline number (1.0 = perfect).  Spearman's rank correlation
says whether the model orders the rows as the hardware does.  Weights (noisy rows < 1) enter
the geometric mean and the shares; Spearman and the worst error count every row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Summary:
    """One group of rows (a dataset, a kind, ...)."""

    n: int
    geomean_error: float        # geometric mean of max(r, 1/r), weighted
    median_ratio: float         # median of predicted / measured
    median_error: float         # median of |r - 1|
    within_25: float            # weighted share with |r - 1| <= 0.25
    within_2x: float            # weighted share with 1/2 <= r <= 2
    spearman: float             # rank correlation of predicted and measured (nan for n < 3)
    max_error: float            # largest max(r, 1/r)

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties sharing their mean rank."""
    order = np.argsort(x, kind="mergesort")
    r = np.empty(len(x))
    r[order] = np.arange(1, len(x) + 1)
    values = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and values[j + 1] == values[i]:
            j += 1
        if j > i:
            r[order[i:j + 1]] = (i + j + 2) / 2.0
        i = j + 1
    return r


def spearman(a, b) -> float:
    """Spearman's rank correlation (Pearson's r of the ranks); nan below 3 points or without spread."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 3:
        return math.nan
    ra, rb = ranks(a), ranks(b)
    sa, sb = ra.std(), rb.std()
    if sa == 0 or sb == 0:
        return math.nan
    return float(((ra - ra.mean()) * (rb - rb.mean())).mean() / (sa * sb))


def summarize(predicted, measured, weights=None) -> Summary:
    """Summary of paired predicted / measured values (same unit, all > 0)."""
    p, m = np.asarray(predicted, dtype=float), np.asarray(measured, dtype=float)
    w = np.ones(len(p)) if weights is None else np.asarray(weights, dtype=float)
    if len(p) == 0:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
    r = p / m
    err = np.exp(np.abs(np.log(r)))
    ws = w / w.sum()
    return Summary(n=len(p), geomean_error=float(np.exp((ws * np.abs(np.log(r))).sum())),
                   median_ratio=float(np.median(r)), median_error=float(np.median(np.abs(r - 1.0))),
                   within_25=float((ws * (np.abs(r - 1.0) <= 0.25 + 1e-12)).sum()),
                   within_2x=float((ws * ((r >= 0.5 - 1e-12) & (r <= 2.0 + 1e-12))).sum()),
                   spearman=spearman(p, m), max_error=float(err.max()))


def check(summary: Summary, thresholds: dict[str, float]) -> list[str]:
    """The thresholds *summary* breaks, as sentences (empty when it meets them all)."""
    tests = {"geomean_error_max": (summary.geomean_error, lambda v, t: v <= t, "geometric-mean error {v:.3f}x above {t}x"),
             "median_error_max": (summary.median_error, lambda v, t: v <= t, "median |error| {v:.1%} above {t:.0%}"),
             "max_error_max": (summary.max_error, lambda v, t: v <= t, "worst error {v:.2f}x above {t}x"),
             "within_25_min": (summary.within_25, lambda v, t: v >= t, "{v:.1%} within ±25%, below {t:.0%}"),
             "within_2x_min": (summary.within_2x, lambda v, t: v >= t, "{v:.1%} within 2x, below {t:.0%}"),
             "spearman_min": (summary.spearman, lambda v, t: v >= t, "Spearman {v:.3f} below {t}")}
    out = []
    for key, threshold in thresholds.items():
        value, ok, text = tests[key]
        if math.isnan(value) or not ok(value, threshold):
            out.append(text.format(v=value, t=threshold))
    return out
