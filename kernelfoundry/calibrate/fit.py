"""Least squares on log error over a hardware file's fitted figures (Levenberg-Marquardt, numpy only).

A :class:`Measurement` predicts its latency from a :class:`HardwareSpec`; :func:`fit` varies the
figures of :data:`FIGURES` (in log space, inside their bounds) to minimise the weighted sum of
``log(predicted / measured)^2``.  A figure no row's prediction depends on is left as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..perfmodel import HardwareSpec, get_figure, with_figures

#: figure -> (lower, upper): the "approx" / fitted figures calibration may change.
FIGURES: dict[str, tuple[float, float]] = {
    "dram_efficiency": (0.2, 1.0),
    "l2_tbps": (0.5, 200.0),
    "matrix_efficiency": (0.1, 1.0),
    "launch_overhead_us": (0.1, 100.0),
    "eager_op_overhead_us": (0.1, 100.0),
    "library_efficiency.gemm": (0.05, 1.0),
    "library_efficiency.elementwise": (0.05, 1.0),
    "library_efficiency.reduction": (0.05, 1.0),
}


@dataclass
class Measurement:
    """One measured latency and how the model predicts it on a given spec."""

    id: str
    kind: str                                   # op kind (reports per kind)
    measured_s: float
    predict: Callable[[HardwareSpec], float]
    weight: float = 1.0
    source: str = ""


def log_errors(rows: list[Measurement], spec: HardwareSpec) -> np.ndarray:
    """log(predicted / measured) per row."""
    return np.array([math.log(max(r.predict(spec), 1e-15) / r.measured_s) for r in rows])


@dataclass
class FitResult:
    before: dict[str, float]
    after: dict[str, float]
    fitted: list[str]                              # figures that moved (some row depends on them)
    untouched: list[str] = field(default_factory=list)
    iterations: int = 0


def fit(rows: list[Measurement], spec: HardwareSpec, figures: list[str] | None = None, *,
        max_iter: int = 40, step: float = 1e-3) -> FitResult:
    """Fit *figures* (default :data:`FIGURES`) of *spec* to *rows*; see the module docstring."""
    names = list(figures or FIGURES)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise ValueError(f"cannot fit {unknown}; fittable figures: {', '.join(FIGURES)}")
    if not rows:
        raise ValueError("no measurements to fit")
    before = {n: get_figure(spec, n) for n in names}
    w = np.sqrt(np.array([r.weight for r in rows]))
    lo = np.log([FIGURES[n][0] for n in names])
    hi = np.log([FIGURES[n][1] for n in names])
    x = np.clip(np.log([before[n] for n in names]), lo, hi)

    def residual(v: np.ndarray) -> np.ndarray:
        return w * log_errors(rows, with_figures(spec, dict(zip(names, np.exp(v)))))

    def jacobian(v: np.ndarray, r0: np.ndarray) -> np.ndarray:
        cols = []
        for j in range(len(v)):
            d = np.zeros_like(v)
            d[j] = step if v[j] + step <= hi[j] else -step
            cols.append((residual(v + d) - r0) / d[j])
        return np.stack(cols, axis=1)

    r = residual(x)
    J = jacobian(x, r)
    live = np.abs(J).max(axis=0) > 1e-9
    lam, it = 1e-2, 0
    for it in range(1, max_iter + 1):
        A = J[:, live].T @ J[:, live]
        g = J[:, live].T @ r
        improved = False
        while lam < 1e8:
            delta = np.zeros_like(x)
            delta[live] = -np.linalg.solve(A + lam * np.diag(np.diag(A) + 1e-12), g)
            trial = np.clip(x + delta, lo, hi)
            r_trial = residual(trial)
            if r_trial @ r_trial < r @ r - 1e-15:
                x, r, lam, improved = trial, r_trial, max(lam / 3, 1e-7), True
                break
            lam *= 4
        if not improved or np.abs(delta).max() < 1e-7:
            break
        J = jacobian(x, r)
    after = {n: float(np.exp(v)) for n, v in zip(names, x)}
    fitted = [n for n, ok in zip(names, live) if ok]
    return FitResult(before=before, after={n: after[n] if n in fitted else before[n] for n in names},
                     fitted=fitted, untouched=[n for n in names if n not in fitted], iterations=it)
