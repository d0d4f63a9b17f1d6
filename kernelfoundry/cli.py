"""``kernelfoundry COMMAND [ARGS]``: the console command (``[project.scripts]``), one subcommand per
``python -m kernelfoundry.COMMAND`` tool, with the same arguments.

``--hardware-dir DIR`` (before or after the subcommand, repeatable) adds a directory of hardware
``.yaml`` files, searched before the shipped library; it sets ``$KERNELFOUNDRY_HARDWARE_DIR``, which
the ``python -m`` forms read as well, and which local Ray workers inherit.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

from . import __version__
from .perfmodel import HARDWARE_DIR, HARDWARE_DIR_ENV

#: subcommand -> (module whose ``main(argv)`` runs it, one line of help)
COMMANDS: dict[str, tuple[str, str]] = {
    "evolve": ("kernelfoundry.evolve", "search for fast kernels of a task (or a KernelBench problem file)"),
    "verify": ("kernelfoundry.verify", "run every verifier gate on one kernel file"),
    "plot": ("kernelfoundry.plot", "heatmap and progress plots of a run"),
    "export": ("kernelfoundry.export", "write a run's elites as tuned kernel files (or KernelBench solutions)"),
    "hardware": ("kernelfoundry.hardware", "list or show the hardware library"),
    "bench": ("kernelfoundry.bench", "compare search methods on a suite of tasks"),
    "fidelity": ("kernelfoundry.fidelity.__main__", "the performance model against published timings"),
    "calibrate": ("kernelfoundry.calibrate", "refit a hardware file's figures to measured timings"),
    "memory": ("kernelfoundry.memory.__main__", "the experience memory shared by runs"),
    "task": ("kernelfoundry.kernelbench.cli", "import a KernelBench problem file as a task file, for review"),
    "contract": ("kernelfoundry.kernelbench.contract", "KernelBench's own check of a ModelNew solution"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"usage: kernelfoundry [--hardware-dir DIR] COMMAND [ARGS...]   (kernelfoundry {__version__})", "",
             "commands (each also runs as `python -m kernelfoundry.COMMAND`; `kernelfoundry COMMAND --help`):"]
    lines += [f"  {name.ljust(width)}  {doc}" for name, (_, doc) in COMMANDS.items()]
    lines += ["", "options:",
              "  --hardware-dir DIR  a directory of your own hardware .yaml files, searched before the shipped",
              f"                      library ({HARDWARE_DIR}); repeatable, before or after COMMAND.",
              f"                      Same as ${HARDWARE_DIR_ENV}=DIR (several joined by '{os.pathsep}').",
              "  --version           print the version",
              "  -h, --help          this text",
              "",
              "Prompt templates: `evolve --prompts DIR` overrides any subset of the shipped ones."]
    return "\n".join(lines)


def split_hardware_dirs(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the ``--hardware-dir`` values, the other arguments); stops looking at a ``--``."""
    dirs: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        if arg == "--hardware-dir":
            if i + 1 >= len(argv):
                raise SystemExit("kernelfoundry: error: --hardware-dir needs a directory")
            dirs.append(argv[i + 1])
            i += 2
            continue
        if arg.startswith("--hardware-dir="):
            dirs.append(arg.split("=", 1)[1])
        else:
            rest.append(arg)
        i += 1
    return dirs, rest


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    dirs, argv = split_hardware_dirs(argv)
    for d in dirs:
        if not Path(d).expanduser().is_dir():
            print(f"kernelfoundry: error: --hardware-dir {d} is not a directory.", file=sys.stderr)
            return 2
    if dirs:   # absolute: Ray workers and sandboxed children do not share this working directory
        given = [str(Path(d).expanduser().resolve()) for d in dirs]
        old = os.environ.get(HARDWARE_DIR_ENV, "")
        os.environ[HARDWARE_DIR_ENV] = os.pathsep.join(given + ([old] if old else []))
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"kernelfoundry {__version__}")
        return 0
    name, args = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"kernelfoundry: error: unknown command {name!r}; commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return module.main(args) or 0


if __name__ == "__main__":
    sys.exit(main())
