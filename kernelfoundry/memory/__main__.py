"""``python -m kernelfoundry.memory [stats|show|prune|export]``: what the experience memory holds.

  stats                        experiences per task, action values (Q1 draft, Q2 refine), size
  show [--task T] [--action A] [--limit N] [--diff]
                               the latest experiences, one line each (with their diffs: --diff)
  prune [--task T] [--keep-per-task N] [--older-than DAYS]
                               forget experiences (--task also forgets the task's values and elites)
  export [--out FILE]          every experience and elite as JSON lines (stdout by default)

The memory file is --memory PATH, else $KERNELFOUNDRY_MEMORY, else archives/memory.sqlite.
To reset the memory, delete the file (runs create it again).  See docs/memory.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import UserError
from . import resolve_memory_path
from .store import ExperienceStore
from .values import STAGE_NAMES


def _fmt(x, spec=".3f") -> str:
    return "-" if x is None else format(x, spec)


def cmd_stats(store: ExperienceStore, args) -> None:
    s = store.stats()
    print(f"memory {s['path']}: {s['experiences']} experiences from {s['runs']} runs, {s['elites']} elites, "
          f"{s['bytes'] / 1e6:.2f} MB")
    if s["tasks"]:
        print(f"\n{'task':<24} {'op kind':<14} {'experiences':>11} {'correct':>8} {'best':>8}")
        for t in s["tasks"]:
            print(f"{t['task']:<24} {t['op_kind']:<14} {t['experiences']:>11} {t['correct']:>8} "
                  f"{_fmt(t['best_objective']):>8}")
    for stage, label in STAGE_NAMES.items():
        rows = [v for v in s["values"] if v["stage"] == stage][: args.top]
        if rows:
            print(f"\nstage {label}: best actions over all tasks")
            print(f"  {'action':<40} {'n':>6} {'Q':>8} {'improved':>9}")
            for v in rows:
                print(f"  {v['action'][:40]:<40} {v['n']:>6} {v['q']:>8.3f} {v['n_positive']:>9}")


def cmd_show(store: ExperienceStore, args) -> None:
    n = 0
    for e in store.iter_experiences(task=args.task, action=args.action, limit=args.limit):
        n += 1
        outcome = "correct" if e["passed"] else f"failed at {e['gate']}"
        print(f"#{e['id']} {e['task']} stage {e['stage']} {e['action']} ({e['request_kind']}): parent "
              f"{_fmt(e['parent_objective'])} -> {_fmt(e['objective'])}, {outcome}, reward {e['reward']:.3f}"
              f"  {(e['description'] or '')[:80]}")
        if args.diff and e["diff"]:
            print("    " + e["diff"].rstrip().replace("\n", "\n    "))
    if not n:
        print("no experience matches.")


def cmd_prune(store: ExperienceStore, args) -> None:
    if args.task is None and args.keep_per_task is None and args.older_than is None:
        raise UserError("prune needs --task, --keep-per-task or --older-than (to forget everything, delete "
                        f"{store.path}).")
    if args.keep_per_task is not None and args.keep_per_task < 0:
        raise UserError(f"--keep-per-task must be >= 0; got {args.keep_per_task}.")
    removed = store.prune(task=args.task, keep_per_task=args.keep_per_task,
                          older_than_s=None if args.older_than is None else args.older_than * 86400.0)
    print(f"removed {removed} experiences; {store.stats()['experiences']} left.")


def cmd_export(store: ExperienceStore, args) -> None:
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    try:
        for e in store.iter_experiences():
            out.write(json.dumps({"type": "experience", **e}) + "\n")
        for e in store.iter_elites():
            out.write(json.dumps({"type": "elite", **e}) + "\n")
    finally:
        if args.out:
            out.close()
            print(f"wrote {args.out}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelfoundry.memory", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--memory", type=Path, metavar="PATH", help="memory file (default: see above)")
    sub = p.add_subparsers(dest="command")
    st = sub.add_parser("stats", help="what the memory holds")
    st.add_argument("--top", type=int, default=12, help="actions listed per stage")
    sh = sub.add_parser("show", help="the latest experiences")
    sh.add_argument("--task")
    sh.add_argument("--action", help="e.g. builtin:grow_block, llm:openai/gpt-4o")
    sh.add_argument("--limit", type=int, default=20)
    sh.add_argument("--diff", action="store_true", help="print each experience's diff")
    pr = sub.add_parser("prune", help="forget experiences")
    pr.add_argument("--task", help="forget this task entirely (experiences, values, elites)")
    pr.add_argument("--keep-per-task", type=int, metavar="N", help="keep the N most valuable experiences per task")
    pr.add_argument("--older-than", type=float, metavar="DAYS", help="forget experiences older than DAYS")
    ex = sub.add_parser("export", help="every experience and elite as JSON lines")
    ex.add_argument("--out", type=Path, help="file to write (default: stdout)")
    args = p.parse_args(argv)
    if args.command is None:
        args.command, args.top = "stats", 12
    try:
        from .. import DEFAULT_ARCHIVES
        path = resolve_memory_path(args.memory, DEFAULT_ARCHIVES)
        if path is None:
            raise UserError("the memory is switched off ($KERNELFOUNDRY_MEMORY=off); give --memory PATH.")
        with ExperienceStore(path, create=False) as store:
            {"stats": cmd_stats, "show": cmd_show, "prune": cmd_prune, "export": cmd_export}[args.command](store, args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
