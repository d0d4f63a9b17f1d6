"""``python -m kernelfoundry.fidelity DATASET...``: compare the performance model with measured timings.

Prints, per dataset and per op kind, n, the geometric-mean error factor, the median
predicted / measured, the share within ±25% and within 2x, Spearman's rank correlation and the
worst rows with the model's breakdown; checks each dataset against the thresholds kept beside
it (``<stem>.thresholds.yaml``).  Exit status 1 when a threshold is broken, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import UserError
from .dataset import is_dataset_file, load_dataset, load_thresholds
from .predict import predict_dataset
from .tables import dataset_report, summaries
from .error_stats import check

EPILOG = """\
examples:
  python -m kernelfoundry.fidelity experiments/fidelity/*
  python -m kernelfoundry.fidelity experiments/fidelity/kernelbench_h100.yaml --worst 20 --plot fidelity.png
  python -m kernelfoundry.fidelity experiments/fidelity/liger_a100.yaml --hardware a100 --refresh-traces
  python -m kernelfoundry.fidelity experiments/fidelity/* --write-bands    # refresh the error-band table
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kernelfoundry.fidelity", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Compare the performance model's predictions with measured GPU timings "
                                            "(datasets: docs/fidelity.md).")
    p.add_argument("paths", nargs="+", metavar="DATASET",
                   help="dataset .yaml files or directories holding them (other files are skipped)")
    p.add_argument("--hardware", metavar="NAME", help="predict on this hardware instead of each dataset's own")
    p.add_argument("--worst", type=int, default=10, metavar="N", help="worst rows to list per dataset (default 10)")
    p.add_argument("--plot", metavar="PNG", help="write predicted vs measured (log-log) to this image")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of markdown")
    p.add_argument("--compiled", action="store_true",
                   help="kernel rows: use the compiler's registers, shared memory and spills (compiled ahead of "
                        "time for the hardware's Triton target) instead of the model's estimates")
    p.add_argument("--refresh-traces", action="store_true",
                   help="re-trace every dataset kernel and rewrite the trace caches")
    p.add_argument("--write-bands", action="store_true",
                   help="rewrite the error-band table (kernelfoundry/fidelity/bands.yaml) from these datasets "
                        "(held-out error: every dataset of the table must be given)")
    p.add_argument("--no-held-out", action="store_true",
                   help="skip the cross-validation (the held-out columns; seconds per dataset)")
    return p


def dataset_paths(paths: list[str]) -> list[Path]:
    out = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(q for q in p.glob("*.y*ml") if is_dataset_file(q)))
        elif is_dataset_file(p):
            out.append(p)
        elif not p.exists():
            raise UserError(f"{p} does not exist; give dataset .yaml files or directories.")
    if not out:
        raise UserError("no dataset files among the paths given (thresholds files and other files are skipped).")
    return out


def run(args) -> int:
    from .bands import write_bands
    from .crossval import held_out
    from .predict import row_models
    if args.write_bands and (args.no_held_out or args.hardware or args.compiled):
        raise UserError("--write-bands needs the held-out error on each dataset's own hardware, with the model's "
                        "estimates: drop --no-held-out, --hardware and --compiled.")
    results, reports, failed, data = [], [], False, {}
    for path in dataset_paths(args.paths):
        dataset = load_dataset(path)
        hardware = args.hardware or dataset.hardware
        preds = predict_dataset(dataset, hardware, refresh_traces=args.refresh_traces, compiled=args.compiled)
        broken = check(summaries(preds)["all"], load_thresholds(dataset)) if not args.hardware else None
        failed |= bool(broken)
        held = None if args.no_held_out else held_out(dataset, row_models(dataset), hardware)
        results.append((dataset, hardware, preds, held))
        reports.append(dataset_report(dataset, hardware, preds, worst=args.worst, broken=broken, held=held))
        data[dataset.name] = {"hardware": hardware, "predictor": dataset.predictor,
                              "summaries": {k: v.to_dict() for k, v in summaries(preds).items()},
                              "rows": [{"id": p.row.id, "kind": p.row.kind, "predicted_ms": p.predicted_ms,
                                        "measured_ms": p.row.measured_ms, "bound": p.bound,
                                        **({"held_out_ms": h, "family": f} if held else {})}
                                       for p, h, f in zip(preds, held.predicted_ms if held else preds,
                                                          held.families if held else preds)],
                              "held_out": held.method if held else None,
                              "thresholds_broken": broken}
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        print("\n\n".join(reports))
    if args.plot:
        from .plot import plot
        written = plot([(f"{d.name} ({h})", p) for d, h, p, _ in results], Path(args.plot))
        print(f"\nplot: {written}", file=sys.stderr)
    if args.write_bands:
        written = write_bands(results)
        print(f"\nerror bands: {written}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
