"""``kernelfoundry task import PROBLEM.py [--out task.yaml]`` (also ``python -m kernelfoundry.kernelbench import ...``):
review what an import makes."""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

import yaml

from ..errors import UserError


def problems_in(directory: Path) -> list[Path]:
    """The KernelBench problem files under *directory* (``*.py`` with a ``class Model``), sorted."""
    if not directory.is_dir():
        raise UserError(f"{directory} is not a directory of problem files.")
    found = []
    for path in sorted(directory.rglob("*.py"), key=lambda p: (str(p.parent), _number(p.name), p.name)):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "class Model" in text and "def get_inputs" in text:
            found.append(path)
    if not found:
        raise UserError(f"directory {directory} holds no KernelBench problem file (a .py with class Model and "
                        "get_inputs()).")
    return found


def _number(name: str) -> int:
    head = name.split("_", 1)[0]
    return int(head) if head.isdigit() else 1 << 30


def main(argv: list[str] | None = None) -> int:
    """The ``task`` command: ``import PROBLEM.py`` writes the task file a problem file makes."""
    p = argparse.ArgumentParser(
        prog="kernelfoundry task",
        description="Task-file tools. `import PROBLEM.py` turns a KernelBench-style problem file (class Model, "
                    "get_inputs(), get_init_inputs()) into the equivalent task file, as evolve, verify and bench "
                    "do on the fly; see docs/kernelbench.md.")
    sub = p.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import", help="write the task file of a KernelBench problem file for review")
    imp.add_argument("problem", type=Path, metavar="PROBLEM.py")
    imp.add_argument("--out", type=Path, metavar="TASK.yaml",
                     help="write the task here (its generated seed beside it as <stem>_seed.py); default: print it")
    imp.add_argument("--seed-kernel", type=Path, metavar="FILE", help="name this kernel as the task's seed")
    imp.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    args = p.parse_args(argv)
    try:
        return _import(args)
    except UserError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


def _import(args: argparse.Namespace) -> int:
    from ..task import load_task
    from .importer import import_problem, write_task
    if args.problem.suffix != ".py":
        raise UserError(f"{args.problem} is not a .py problem file.")
    if args.seed_kernel is not None and not args.seed_kernel.is_file():
        raise UserError(f"--seed-kernel {args.seed_kernel} does not exist (or is not a file).")
    imported = import_problem(args.problem)
    if args.out is None:
        task = dict(imported.task)
        if args.seed_kernel is not None:
            task["seeds"] = [str(args.seed_kernel)]
        print(yaml.safe_dump(task, sort_keys=False, width=110))
        if imported.seed_source is None and args.seed_kernel is None:
            print(f"# no seed kernel generated: {imported.no_seed_reason}", file=sys.stderr)
        return 0
    if args.out.suffix not in (".yaml", ".yml"):
        raise UserError(f"--out {args.out} must name a .yaml file.")
    try:
        path = write_task(imported, args.out, seed_kernel=args.seed_kernel)
    except OSError as exc:
        raise UserError(f"cannot write {args.out}: {exc.strerror or exc}.") from None
    task = load_task(path, check_files=False)
    shapes = "; ".join(", ".join(f"{k}={v}" for k, v in env.items()) or "(no size symbols)"
                       for env in task.check_shapes)
    print(f"{path}: task '{task.name}' (level {task.level}), inputs {', '.join(task.input_names)}")
    print(f"  target {', '.join(f'{k}={v}' for k, v in task.target_shapes[0].items())}; check {shapes}")
    if args.seed_kernel is not None:
        print(f"  seed: {args.seed_kernel}")
    elif imported.seed_source is not None:
        print(f"  seed: {path.with_name(path.stem + '_seed.py')} (generated)")
    else:
        print(f"  no seed kernel generated: {imported.no_seed_reason}; write one and name it in 'seeds'.")
    return 0
