"""``python -m kernelfoundry.calibrate MEASURED... --hardware NAME [--write]``: fit a hardware file's
approx figures (DRAM / L2 / matrix / library efficiencies, launch and per-op overheads) to measured
latencies by least squares on log error, print the error before and after per op kind (on the rows
fitted and on held-out rows: every fifth), and with ``--write`` save
``hardware/<name>-calibrated-<date>.yaml`` with the fitted values, their source and the residuals.

MEASURED: run directories (or ``run.sqlite``) of ``evolve --device cuda`` runs, CSVs written by an
export's ``bench_elites.py``, or fidelity datasets (``experiments/fidelity/*.yaml``).  docs/device.md.

Public names: :func:`main` (the command) and ``CSV_COLUMNS`` (the columns of a measured CSV, which an
export's ``bench_elites.py`` writes).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import UserError
from ..fidelity import summarize
from ..perfmodel import load_hardware
from .fit import FIGURES, fit, log_errors, with_figures
from .hwfile import default_path, write
from .rows import CSV_COLUMNS, read_rows

__all__ = ["CSV_COLUMNS", "main"]


def split(rows: list, every: int) -> tuple[list, list]:
    """(fit rows, held-out rows): every *every*-th row is held out (none below 2 x *every* rows)."""
    if every < 2 or len(rows) < 2 * every:
        return list(rows), []
    return [r for i, r in enumerate(rows) if i % every != every - 1], rows[every - 1::every]


def error_table(rows: list, before, after) -> dict[str, tuple[int, float, float]]:
    """Per op kind and overall: (n, geomean error before, after)."""
    import numpy as np
    out = {}
    groups = {"all": rows, **{k: [r for r in rows if r.kind == k] for k in sorted({r.kind for r in rows})}}
    for kind, group in groups.items():
        m = np.array([r.measured_s for r in group])
        w = [r.weight for r in group]
        eb, ea = np.exp(log_errors(group, before)) * m, np.exp(log_errors(group, after)) * m
        out[kind] = (len(group), summarize(eb, m, w).geomean_error, summarize(ea, m, w).geomean_error)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelfoundry.calibrate", description=__doc__.splitlines()[0])
    p.add_argument("measured", nargs="+", help="run directories, bench_elites CSVs or fidelity datasets")
    p.add_argument("--hardware", required=True, help="the hardware file to fit (a library name or a path)")
    p.add_argument("--figures", help=f"comma-separated figures to fit (default all: {', '.join(FIGURES)})")
    p.add_argument("--holdout", type=int, default=5, help="hold out every N-th row (default 5; 0: none)")
    p.add_argument("--write", action="store_true", help="write hardware/<name>-calibrated-<date>.yaml")
    p.add_argument("--out", type=Path, help="with --write: the file to write instead")
    args = p.parse_args(argv)
    try:
        return run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


def run(args) -> int:
    base = load_hardware(args.hardware)
    figures = [f.strip() for f in args.figures.split(",") if f.strip()] if args.figures else list(FIGURES)
    bad = [f for f in figures if f not in FIGURES]
    if bad:
        raise UserError(f"--figures: cannot fit {bad}; fittable: {', '.join(FIGURES)}.")
    rows, devices = [], []
    for path in args.measured:
        got, device = read_rows(path, base)
        rows += got
        devices.append(device)
    fit_rows, held = split(rows, args.holdout)
    result = fit(fit_rows, base, figures)
    after = with_figures(base, result.after)
    print(f"{base.name}: {len(rows)} measurements ({len(fit_rows)} fitted, {len(held)} held out) from "
          f"{'; '.join(devices)}")
    for name in figures:
        state = "" if name in result.fitted else "  (no row depends on it: unchanged)"
        print(f"  {name:<32} {result.before[name]:>9.4g} -> {result.after[name]:.4g}{state}")
    residuals = {}
    for label, group in (("fit", fit_rows), ("held_out", held)):
        if not group:
            continue
        table = error_table(group, base, after)
        residuals[label] = {k: {"n": n, "geomean_error_before": round(b, 4), "geomean_error_after": round(a, 4)}
                            for k, (n, b, a) in table.items()}
        print(f"geometric-mean error on the {label.replace('_', '-')} rows (before -> after):")
        for kind, (n, b, a) in table.items():
            print(f"  {kind:<18} n={n:<4} {b:.3f}x -> {a:.3f}x")
    if args.write:
        date = time.strftime("%Y-%m-%d", time.gmtime())
        device = "; ".join(devices)
        note = f"calibrated: {len(fit_rows)} measurements, {device}, {date}"
        path = args.out or default_path(base, date)
        moved = {n: result.after[n] for n in result.fitted}
        write(base, moved, path, note=note, calibration={
            "date": date, "device": device, "points": len(fit_rows), "held_out": len(held), "base": base.name,
            "fitted": {n: {"before": round(result.before[n], 6), "after": round(result.after[n], 6)} for n in moved},
            "residuals": residuals})
        print(f"wrote {path}")
    return 0
