"""``python -m kernelfoundry.export RUN_DIR``: elite kernels as standalone, tuned ``.py`` files.

Each file is the candidate's own source plus a header (task, cell, objective,
predicted latency per hardware) and a ``launch(*inputs, hardware=..., **overrides)``
wrapper whose defaults are the parameters the performance model tuned per
hardware.  ``manifest.json`` lists them all.
"""

from __future__ import annotations

import argparse
import pprint
import sys
import traceback
from pathlib import Path

from .errors import UserError
from .search.history import open_run
from .search.stats import write_json_atomic

WRAPPER = '''

# ---- tuned template parameters, added by kernelfoundry.export ----
TUNED_PARAMS = {tuned}
DEFAULT_HARDWARE = {default_hw!r}
launch_with_params = launch


def launch(*inputs, hardware=DEFAULT_HARDWARE, **overrides):
    """Run the kernel with the parameters tuned for *hardware*; keywords override them."""
    if hardware not in TUNED_PARAMS:
        raise ValueError(f"no tuned parameters for {{hardware!r}}; known: {{sorted(TUNED_PARAMS)}}")
    params = dict(TUNED_PARAMS[hardware])
    params.update(overrides)
    return launch_with_params(*inputs, **params)
'''


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.4g} ms" if seconds >= 1e-4 else f"{seconds * 1e6:.4g} us"


def render_export(*, task_name: str, level: int, cid: int, row, cell_desc: str, hardware: dict) -> str:
    """The text of one exported kernel file."""
    lines = [f"KernelFoundry elite kernel for task '{task_name}' (level {level}).", "",
             f"candidate: {cid} (mutator {row.mutator}, parents {row.parent_ids})",
             f"cell: {cell_desc}",
             f"objective: {row.objective:.4g}x speedup over the eager PyTorch estimate "
             f"(geometric mean over target shapes and hardware)",
             "predicted latency per hardware, at its tuned parameters:"]
    for name, score in hardware.items():
        lines.append(f"  {name}: {_ms(score.get('latency_s'))}, {100 * score.get('sol_fraction', 0):.1f}% of "
                     f"speed-of-light, baseline {_ms(score.get('baseline_s'))}, params {score.get('best_params')}")
    default_hw = next(iter(hardware))
    lines += ["", "Usage (TRITON_INTERPRET=1 runs it on CPU tensors):",
              f"  out = launch(*inputs)                      # parameters tuned for {default_hw}",
              "  out = launch(*inputs, hardware='NAME')     # tuned for another listed hardware",
              "  out = launch(*inputs, BLOCK=...)           # override any parameter"]
    header = '"""' + "\n".join(lines).replace('"""', "'''") + '\n"""\n'
    tuned = {name: dict(score.get("best_params") or {}) for name, score in hardware.items()}
    wrapper = WRAPPER.format(tuned=pprint.pformat(tuned, sort_dicts=False, width=100), default_hw=default_hw)
    return header + row.source.rstrip() + "\n" + wrapper


def export_run(run_dir: str | Path, *, out: Path | None = None, top: int | None = None) -> tuple[Path, list[dict]]:
    run = open_run(run_dir)
    try:
        out = Path(out) if out else run.run_dir / "export"
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create export directory {out}: {exc.strerror or exc}.") from None
        elites = sorted(run.archive.elites(), key=lambda e: -e.objective)
        if top is not None:
            elites = elites[:top]
        manifest = []
        for rank, elite in enumerate(elites, 1):
            row = run.store.get_candidate(elite.candidate_id)
            if not row.hardware:
                continue
            cell_desc = run.archive.spec.describe_cell(elite.cell)
            name = f"{run.task.name}_{rank:02d}_c{elite.candidate_id}.py"
            text = render_export(task_name=run.task.name, level=run.task.level, cid=elite.candidate_id, row=row,
                                 cell_desc=cell_desc, hardware=row.hardware)
            (out / name).write_text(text)
            manifest.append({"file": name, "rank": rank, "candidate_id": elite.candidate_id,
                             "objective": elite.objective, "cell": list(elite.cell), "cell_description": cell_desc,
                             "descriptors": row.descriptors, "mutator": row.mutator, "parent_ids": row.parent_ids,
                             "hardware": {k: {f: v.get(f) for f in ("latency_s", "sol_fraction", "baseline_s",
                                                                     "best_params")}
                                          for k, v in row.hardware.items()}})
        write_json_atomic(out / "manifest.json", {"task": run.task.name, "run_dir": str(run.run_dir),
                                                  "kernels": manifest})
        return out, manifest
    finally:
        run.close()


def export_llm_log(run_dir: str | Path, path: Path) -> int:
    """Write RUN_DIR's LLM log as a replay JSONL (``--model replay/PATH`` answers from it); return its lines."""
    from .mutate.replay import export_replay

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
        description="Write each elite kernel of RUN_DIR as a standalone .py (its kernels, its launch, and "
                    "the template parameters tuned per hardware as defaults) plus manifest.json.")
    parser.add_argument("run_dir", type=Path, help="a run directory made by kernelfoundry.evolve")
    parser.add_argument("--out", type=Path, help="output directory (default: RUN_DIR/export)")
    parser.add_argument("--top", type=int, help="export only the K best elites")
    parser.add_argument("--llm-log", type=Path, metavar="FILE",
                        help="also write the run's LLM requests and answers as a replay JSONL: "
                             "'evolve --model replay/FILE --seed S' with the run's seed reproduces its candidates")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    args = parser.parse_args(argv)
    try:
        if args.top is not None and args.top < 1:
            raise UserError(f"--top must be at least 1; got {args.top}.")
        out, manifest = export_run(args.run_dir, out=args.out, top=args.top)
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
