"""Predicted vs measured, log-log, one colour per op kind (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

from .predict import Prediction


def plot(results: list[tuple[str, list[Prediction]]], path: Path) -> Path:
    """One panel per dataset; writes *path* (PNG) and returns it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 5.5), squeeze=False)
    for ax, (name, preds) in zip(axes[0], results):
        kinds = sorted({p.row.kind for p in preds})
        cmap = plt.get_cmap("tab20")
        for i, kind in enumerate(kinds):
            sel = [p for p in preds if p.row.kind == kind]
            ax.scatter([p.row.measured_ms for p in sel], [p.predicted_ms for p in sel], s=18, label=kind,
                       color=cmap(i % 20))
        values = [v for p in preds for v in (p.row.measured_ms, p.predicted_ms)]
        lo, hi = min(values) / 1.5, max(values) * 1.5
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        for f in (1.25, 2.0):
            ax.plot([lo, hi], [lo * f, hi * f], "k:", lw=0.6)
            ax.plot([lo, hi], [lo / f, hi / f], "k:", lw=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("measured (ms)")
        ax.set_ylabel("predicted (ms)")
        ax.set_title(name)
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
