"""Run directories: ``archives/<task>/<UTC timestamp>/`` holding run.sqlite, summary.json, plots/."""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from ..errors import UserError

STORE_NAME = "run.sqlite"
SUMMARY_NAME = "summary.json"


def new_run_dir(task_name: str, *, out: Path | None, root: Path) -> Path:
    """Create a fresh run directory (``out`` as given, or a timestamped one under *root*)."""
    if out is not None:
        run_dir = Path(out)
        if (run_dir / STORE_NAME).exists():
            raise UserError(f"output directory {run_dir} already holds a run ({STORE_NAME}); "
                            f"continue it with --resume {run_dir}, or choose another --out.")
    else:
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        run_dir = root / task_name / stamp
        n = 1
        while run_dir.exists():
            n += 1
            run_dir = root / task_name / f"{stamp}-{n}"
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise UserError(f"cannot write to output directory {run_dir}: {exc.strerror or exc}. "
                        f"Choose a writable --out.") from None
    return run_dir


def existing_run_dir(path: Path) -> Path:
    """Validate a directory given to --resume / plot / export."""
    path = Path(path)
    if not path.is_dir():
        raise UserError(f"run directory {path} does not exist.")
    if not (path / STORE_NAME).is_file():
        raise UserError(f"{path} is not a run directory: it has no {STORE_NAME}. "
                        f"Give a directory made by `python -m kernelfoundry.evolve`.")
    if not os.access(path, os.W_OK):
        raise UserError(f"run directory {path} is not writable.")
    return path
