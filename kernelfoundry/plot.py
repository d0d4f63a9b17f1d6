"""``python -m kernelfoundry.plot RUN_DIR``: archive heatmap, progress curves, prompt lineage."""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .errors import UserError  # noqa: E402
from .search import RunView, open_run, progress_curves  # noqa: E402


def plot_heatmap(run: RunView, path: Path) -> None:
    from ribs.visualize import grid_archive_heatmap
    spec = run.archive.spec
    fig, ax = plt.subplots(figsize=(11, 6.5))
    if run.archive.num_elites:
        grid_archive_heatmap(run.archive.grid, ax=ax, cmap="viridis", aspect="auto",
                             cbar_kwargs={"label": "objective (speedup over eager PyTorch)"})
    else:
        ax.set_xlim(*spec.ranges[0])
        ax.set_ylim(*spec.ranges[1])
        ax.text(sum(spec.ranges[0]) / 2, sum(spec.ranges[1]) / 2, "no correct kernel yet",
                ha="center", va="center")
    for axis, name, (lo, hi), bins in ((ax.xaxis, spec.names[0], spec.ranges[0], spec.bins[0]),
                                       (ax.yaxis, spec.names[1], spec.ranges[1], spec.bins[1])):
        width = (hi - lo) / bins
        labels = spec.labels.get(name) or [str(i) for i in range(bins)]
        axis.set_ticks([lo + (i + 0.5) * width for i in range(bins)])
        axis.set_ticklabels(labels[:bins], fontsize=7)
    plt.setp(ax.get_xticklabels(), rotation=35, ha="right")
    ax.set_xlabel(f"{spec.names[0]} (log2 output elements per program)")
    ax.set_ylabel(spec.names[1].replace("_", " "))
    ax.set_title(f"{run.task.name}: {run.archive.num_elites} elites, coverage {run.archive.coverage:.1%}, "
                 f"QD-score {run.archive.qd_score:.2f}")
    elites = run.archive.elites()
    lo_obj = min((e.objective for e in elites), default=0.0)
    hi_obj = max((e.objective for e in elites), default=1.0)
    for elite in elites:
        bright = (elite.objective - lo_obj) / (hi_obj - lo_obj) > 0.6 if hi_obj > lo_obj else False
        ax.annotate(f"{elite.objective:.2f}\n#{elite.candidate_id}",
                    (lo_center(spec, 0, elite.cell[0]), lo_center(spec, 1, elite.cell[1])),
                    ha="center", va="center", fontsize=6, color="black" if bright else "white")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def lo_center(spec, axis: int, idx: int) -> float:
    lo, hi = spec.ranges[axis]
    return lo + (idx + 0.5) * (hi - lo) / spec.bins[axis]


def plot_progress(run: RunView, path: Path) -> None:
    curves = progress_curves(run.store, run.archive.spec)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, values, title in ((axes[0], curves.best, "best objective (speedup)"),
                              (axes[1], [c * 100 for c in curves.coverage], "coverage (% of cells)"),
                              (axes[2], curves.qd_score, "QD-score")):
        ax.plot(curves.n, values, drawstyle="steps-post", marker="o" if len(curves.n) == 1 else None)
        ax.set_xlabel("candidates evaluated")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{run.task.name}: search progress")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def make_plots(run_dir: str | Path) -> list[Path]:
    run = open_run(run_dir)
    try:
        out = run.run_dir / "plots"
        paths = [out / "heatmap.png", out / "progress.png"]
        try:
            out.mkdir(exist_ok=True)
            plot_heatmap(run, paths[0])
            plot_progress(run, paths[1])
            prompts = run.store.load_prompts()
            if prompts:
                from .mutate import plot_prompt_lineage
                paths.append(out / "prompts.png")
                plot_prompt_lineage(prompts, paths[-1])
        except OSError as exc:
            raise UserError(f"cannot write the plots to {out}: {exc.strerror or exc}"
                            f"{f' ({exc.filename})' if exc.filename else ''}.") from None
        return paths
    finally:
        run.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernelfoundry.plot",
        description="Draw RUN_DIR/plots/heatmap.png (best objective per archive cell), "
                    "RUN_DIR/plots/progress.png (best objective, coverage and QD-score against candidates "
                    "evaluated) and, for LLM runs, RUN_DIR/plots/prompts.png (prompt lineage and credit).")
    parser.add_argument("run_dir", type=Path, help="a run directory made by kernelfoundry.evolve")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    args = parser.parse_args(argv)
    try:
        paths = make_plots(args.run_dir)
    except UserError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
