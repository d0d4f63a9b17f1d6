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


def open_run_store(run_dir: Path) -> "RunStore":
    """The store of an existing run, or a UserError naming the file when it is damaged or empty."""
    import sqlite3

    from ..store import RunStore
    path = run_dir / STORE_NAME
    try:
        store = RunStore(path, create=False)
        task = store.get_meta("task")
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{path} is damaged or is not a run store (SQLite: {exc}); its candidates cannot be "
                        "read. Start a new run, or restore the file from a copy.") from None
    if task is None:
        store.close()
        raise UserError(f"{path} holds no task: the run was stopped while it was being created. "
                        "Start a new run (and remove this directory).")
    return store


LOCK_NAME = ".lock"


def lock_run_dir(run_dir: Path) -> int:
    """Hold RUN_DIR for this process (an exclusive ``flock``); returns the fd to close when done.

    Two sessions on one run would evaluate the same jobs twice and overrun its budget.
    The lock ends with the process, however it ends, so a killed run can be resumed at once.
    """
    import fcntl
    path = run_dir / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 64).decode("ascii", "replace").strip() or "another process"
        os.close(fd)
        raise UserError(f"run directory {run_dir} is in use by another evolve session (pid {holder}); "
                        "wait for it to end or stop it first.") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd
