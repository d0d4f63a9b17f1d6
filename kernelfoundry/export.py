"""``python -m kernelfoundry.export RUN_DIR``: elite kernels as standalone, tuned ``.py`` files.

Each file is the candidate's own source, still a valid candidate (``verify`` passes
it; it can seed a new task), with a comment header (task, cell, objective, predicted
latency and tuned parameters per hardware) and defaults set to the parameters the
performance model tuned for the run's first hardware (``export_source.py``).
``manifest.json`` lists them all.  A new export replaces the previous one in the
same directory and refuses a directory that holds other files unless ``--force``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import traceback
from pathlib import Path
from typing import Any

from .candidate import parse_param_space
from .errors import UserError
from .export_source import tuned_source
from .search import open_run, write_json_atomic
from .verify import format_latency

MANIFEST = "manifest.json"


def _finite(value: Any) -> Any:
    """*value* with non-finite floats as None (strict JSON has no Infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def in_run_order(hardware: dict[str, dict], order: list[str]) -> list[str]:
    """The names of *hardware* in the run's order (the store keeps them sorted)."""
    return [h for h in order if h in hardware] + [h for h in hardware if h not in order]


def tuned_hardware(hardware: dict[str, dict], names: list[str]) -> list[str]:
    """Those of *names* with a valid tuned config (finite latency, parameters)."""
    return [h for h in names if hardware[h].get("best_params")
            and math.isfinite(float(hardware[h].get("latency_s") or math.inf))]


def _call(params: dict[str, Any], names: list[str]) -> str:
    """``launch(*inputs, A=..., B=...)`` with the parameters in *names* order (PARAMS order) first."""
    ordered = [n for n in names if n in params] + [n for n in params if n not in names]
    return "launch(*inputs" + "".join(f", {k}={params[k]!r}" for k in ordered) + ")"


def render_export(*, task_name: str, level: int, cid: int, row, cell_desc: str, hardware: dict,
                  names: list[str], valid: list[str], error_notes: dict[str, str] | None = None) -> str:
    """The text of one exported kernel file: *names* in run order, *valid* those with a tuned config;
    *error_notes* per hardware: the model's measured error band (:func:`kernelfoundry.fidelity.band_note`)."""
    default_hw = valid[0]
    source, missing = tuned_source(row.source, dict(hardware[default_hw]["best_params"]))
    lines = [f"Elite kernel for task '{task_name}' (level {level}), exported from a KernelFoundry run.", "",
             f"candidate: {cid} (mutator {row.mutator}, parents {row.parent_ids})",
             f"cell: {cell_desc}",
             f"objective: {row.objective:.4g}x speedup over the eager PyTorch estimate "
             f"(geometric mean over target shapes and hardware)",
             "predicted latency per hardware, at its tuned parameters (model predictions, not measurements):"]
    for name in names:
        score = hardware[name]
        sol = score.get("sol_fraction")
        if name in valid:
            lines.append(f"  {name}: {format_latency(score.get('latency_s'))}, "
                         f"{'-' if sol is None else f'{100 * sol:.1f}%'} of speed-of-light, "
                         f"baseline {format_latency(score.get('baseline_s'))}")
            if error_notes and error_notes.get(name):
                lines.append(f"    ({error_notes[name]})")
        else:
            lines.append(f"  {name}: no valid config (the model found none that fits this hardware)")
    lines += ["", f"Defaults: the parameters tuned for {default_hw} (first in each PARAMS list and, where "
                  "possible, in launch's signature).",
              "Usage (TRITON_INTERPRET=1 runs it on CPU tensors):"]
    param_names = list(parse_param_space(row.source))
    lines += [f"  {name + ':':<14}out = {_call(hardware[name]['best_params'], param_names)}" for name in valid]
    if missing:
        lines.append(f"launch takes {', '.join(missing)} without a default: pass them as above.")
    header = "".join(f"# {line}".rstrip() + "\n" for line in lines)
    return header + "\n" + source.rstrip() + "\n"


def _error_notes(task, names: list[str]) -> dict[str, str]:
    """The model's measured error band per hardware, for the header (empty if it cannot be had)."""
    try:
        from .fidelity import band_note
        return {name: band_note(task, name) for name in names}
    except Exception:  # noqa: BLE001 - an export must not fail over an annotation
        return {}


def _clear_previous(out: Path, force: bool) -> None:
    """Remove the files of a previous export in *out*; refuse other files unless *force*."""
    if not out.is_dir():
        return
    from .measure import BENCH_SCRIPT
    previous = {MANIFEST, BENCH_SCRIPT}
    try:
        old = json.loads((out / MANIFEST).read_text())
        previous |= {str(k["file"]) for k in old["kernels"]} | ({str(old["problem_file"])} if old.get("problem_file")
                                                                 else set())
    except (OSError, ValueError, KeyError, TypeError):
        pass
    present = {p.name for p in out.iterdir()}
    others = sorted(present - previous)
    if others and not force:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise UserError(f"export directory {out} holds files that no earlier export wrote ({shown}); "
                        "choose an empty --out, or pass --force to write beside them.")
    for name in previous & present:
        try:
            (out / name).unlink()
        except OSError as exc:
            raise UserError(f"cannot remove the previous export's {out / name}: {exc.strerror or exc}.") from None


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}.") from None


FORMATS = ("kernel", "kernelbench")


def export_run(run_dir: str | Path, *, out: Path | None = None, top: int | None = None,
               force: bool = False, fmt: str = "kernel") -> tuple[Path, list[dict]]:
    """Export the elites of *run_dir*; ``fmt="kernelbench"``: ModelNew modules plus the problem file
    (runs of KernelBench problems only, see docs/kernelbench.md)."""
    if fmt not in FORMATS:
        raise UserError(f"--format must be one of {', '.join(FORMATS)}; got {fmt!r}.")
    run = open_run(run_dir)
    try:
        problem_name = None
        if fmt == "kernelbench":
            from .kernelbench import problem_file_name, problem_source
            problem_text = problem_source(run.task)          # refuses tasks not imported from a problem file
            problem_name = problem_file_name(run.task)
        out = Path(out) if out else run.run_dir / "export"
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create export directory {out}: {exc.strerror or exc}.") from None
        _clear_previous(out, force)
        if problem_name is not None:
            _write(out / problem_name, problem_text)
        order = list(run.config.get("hardware") or run.task.hardware)
        elites = sorted(run.archive.elites(), key=lambda e: -e.objective)
        manifest, skipped = [], []
        for elite in elites:
            if top is not None and len(manifest) == top:
                break
            row = run.store.get_candidate(elite.candidate_id)
            names = in_run_order(row.hardware or {}, order)
            valid = tuned_hardware(row.hardware or {}, names)
            if not valid:
                skipped.append(elite.candidate_id)
                continue
            rank = len(manifest) + 1
            cell_desc = run.archive.spec.describe_cell(elite.cell)
            name = f"{run.task.name}_{rank:02d}_c{elite.candidate_id}.py"
            text = render_export(task_name=run.task.name, level=run.task.level, cid=elite.candidate_id, row=row,
                                 cell_desc=cell_desc, hardware=row.hardware, names=names, valid=valid,
                                 error_notes=_error_notes(run.task, valid))
            if fmt == "kernelbench":
                from .kernelbench import modelnew_source
                text = modelnew_source(run.task, text, dict(row.hardware[valid[0]]["best_params"]),
                                       list(parse_param_space(row.source)))
            _write(out / name, text)
            manifest.append({"file": name, "rank": rank, "candidate_id": elite.candidate_id,
                             "objective": elite.objective, "cell": list(elite.cell), "cell_description": cell_desc,
                             "descriptors": row.descriptors, "mutator": row.mutator, "parent_ids": row.parent_ids,
                             "default_hardware": valid[0],
                             "hardware": {k: {f: v.get(f) for f in ("latency_s", "sol_fraction", "baseline_s",
                                                                     "best_params")}
                                          for k, v in row.hardware.items()}})
        if manifest:                     # a GPU user's check-and-time script, both formats (docs/device.md)
            from .measure import BENCH_SCRIPT, bench_spec, render_bench
            hw = manifest[0]["default_hardware"]
            kernels = [(m["file"], run.store.get_candidate(m["candidate_id"]).hardware) for m in manifest
                       if hw in (run.store.get_candidate(m["candidate_id"]).hardware or {})]
            _write(out / BENCH_SCRIPT, render_bench(bench_spec(run.task, hw, kernels)))
        try:
            write_json_atomic(out / MANIFEST, _finite({"task": run.task.name, "run_dir": str(run.run_dir),
                                                       "format": fmt, "problem_file": problem_name,
                                                       "kernels": manifest, "skipped_no_valid_config": skipped}))
        except OSError as exc:
            raise UserError(f"cannot write {out / MANIFEST}: {exc.strerror or exc}.") from None
        return out, manifest
    finally:
        run.close()


def export_llm_log(run_dir: str | Path, path: Path) -> int:
    """Write RUN_DIR's LLM log as a replay JSONL (``--model replay/PATH`` answers from it); return its lines."""
    from .mutate import export_replay

    run = open_run(run_dir)
    try:
        try:
            return export_replay(run.store.iter_llm_calls(), path)
        except OSError as exc:
            raise UserError(f"cannot write the LLM log to {path}: {exc.strerror or exc}.") from None
    finally:
        run.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernelfoundry.export",
        description="Write each elite kernel of RUN_DIR as a standalone .py (its kernels and its launch, "
                    "defaulting to the template parameters tuned for the run's first hardware; the others' in "
                    "its header) plus manifest.json. The files pass `python -m kernelfoundry.verify` and can "
                    "seed new tasks. A new export replaces the previous one in the same directory.")
    parser.add_argument("run_dir", type=Path, help="a run directory made by kernelfoundry.evolve")
    parser.add_argument("--out", type=Path, help="output directory (default: RUN_DIR/export)")
    parser.add_argument("--top", type=int, help="export only the K best elites")
    parser.add_argument("--llm-log", type=Path, metavar="FILE",
                        help="also write the run's LLM requests and answers as a replay JSONL: "
                             "'evolve --model replay/FILE --seed S' with the run's seed reproduces its candidates")
    parser.add_argument("--format", choices=FORMATS, default="kernel", dest="fmt",
                        help="kernel: the candidate files; kernelbench: per elite a KernelBench ModelNew module (same "
                             "constructor and state as the problem's Model, forward on the tuned kernels) plus a copy "
                             "of the problem file (runs of KernelBench problems; docs/kernelbench.md)")
    parser.add_argument("--force", action="store_true",
                        help="write into an --out that holds files no earlier export wrote (they are kept)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    args = parser.parse_args(argv)
    try:
        if args.top is not None and args.top < 1:
            raise UserError(f"--top must be at least 1; got {args.top}.")
        out, manifest = export_run(args.run_dir, out=args.out, top=args.top, force=args.force, fmt=args.fmt)
        if args.llm_log is not None:
            n_lines = export_llm_log(args.run_dir, args.llm_log)
            print(f"{args.llm_log}  {n_lines} recorded LLM answers (use --model replay/{args.llm_log})")
    except UserError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    if not manifest:
        print(f"no correct kernel in {args.run_dir} yet; wrote an empty {out / 'manifest.json'}")
        return 0
    for entry in manifest:
        print(f"{out / entry['file']}  objective {entry['objective']:.3f}  {entry['cell_description']}")
    print(f"{out / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
