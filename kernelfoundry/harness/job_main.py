"""What the sandboxed job modules share: progress lines, the candidate's load, the ``IN.json OUT.json`` main.

Used by the verifier's child (:mod:`.child`), the device job (:mod:`kernelfoundry.measure.child`) and the
compile job (:mod:`kernelfoundry.compiler.job`); trusted code, run inside the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ..safe_io import write_json_atomic
from .payload import REFERENCE_STUB


def report_progress(stage: str) -> None:
    """Append *stage* to ``$KF_SANDBOX_PROGRESS`` (if set) before a gate starts."""
    path = os.environ.get("KF_SANDBOX_PROGRESS")
    if path:
        with open(path, "a") as f:
            f.write(stage + "\n")


@contextmanager
def loaded_candidate(payload: dict[str, Any], data_path: Path | str, result: dict[str, Any], *,
                     prefix: str) -> Iterator[tuple[Any, Any, Any]]:
    """``(task, loaded or None, blob writer)`` for a job's payload; the load gate's dict goes to ``result["gates"]``.

    The payload's task must carry the reference stub (a child never sees the reference).  On exit the
    data channel is closed, the candidate unloaded and its temp directory (named *prefix*...) removed.
    """
    from ..task import task_from_dict
    from ..sandbox import BlobWriter
    from .loader import check_load
    task = task_from_dict(payload["task"], check_files=False)
    if task.reference != REFERENCE_STUB:
        raise ValueError("the child's task must carry the reference stub, not the reference")
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    blob = BlobWriter(data_path)
    loaded = None
    try:
        report_progress("load")
        gate, loaded = check_load(payload["source"], task, directory)
        result["gates"].append(gate.to_dict())
        yield task, loaded, blob
    finally:
        blob.close()
        if loaded is not None:
            loaded.unload()
        shutil.rmtree(directory, ignore_errors=True)


def job_main(argv: list[str] | None, module: str, run: Callable[[dict[str, Any], Path], dict[str, Any]],
             error_fields: dict[str, Any], label: str) -> int:
    """``python -m module IN.json OUT.json``: OUT.json gets ``run(payload, out_path)``; 0, or 2 on bad usage.

    A malformed payload or a bug in the job (never a candidate's failure: jobs catch those) writes
    ``{**error_fields, "error": message}``, prints ``label: message`` and returns 1.
    """
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(f"usage: python -m {module} IN.json OUT.json", file=sys.stderr)
        return 2
    in_path, out_path = Path(args[0]), Path(args[1])
    try:
        result = run(json.loads(in_path.read_text()), out_path)
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}"
        write_json_atomic(out_path, {**error_fields, "error": message})
        print(f"{label}: {message}", file=sys.stderr)
        return 1
    write_json_atomic(out_path, result)
    return 0
