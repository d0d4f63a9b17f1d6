"""``load_task_or_problem``: a task file, or a KernelBench problem file imported (sandboxed) into a
cached task file first.  The commands choose this loader; :func:`kernelfoundry.task.load_task` reads
task files only, so loading a task never starts a sandboxed import unasked (docs/architecture.md)."""

from __future__ import annotations

import json
from pathlib import Path

from ..task import Task, read_task_yaml, load_task, task_from_dict


def load_task_or_problem(path: str | Path, *, check_files: bool = True, allow_no_seed: bool = False) -> Task:
    """:func:`kernelfoundry.task.load_task` for a task file; a ``.py`` path is a KernelBench problem
    file (docs/kernelbench.md), imported into a cached task file first.  ``allow_no_seed`` (an LLM
    drafts the first kernel, docs/llm.md "Drafts") also accepts a problem the seed generator has no
    template for: the task has no seeds and says why in ``no_seed_reason``."""
    path = Path(path)
    if path.suffix != ".py":
        return load_task(path, check_files=check_files, allow_no_seed=allow_no_seed)
    from .importer import materialize
    task_file = materialize(path, check_files=check_files, allow_no_seed=allow_no_seed)
    reason = _import_no_seed_reason(task_file) if allow_no_seed else None
    if reason is None:
        return load_task(task_file, check_files=check_files)
    data = read_task_yaml(task_file)
    if isinstance(data, dict):          # the seed the import would have written does not exist
        data = dict(data, seeds=[], no_seed_reason=f"the seed generator cannot write one: {reason}")
    return task_from_dict(data, source=task_file, check_files=check_files)


def _import_no_seed_reason(task_file: Path) -> str | None:
    """Why the import of a KernelBench problem wrote no seed (``import.json`` beside its cached
    task file, written by :func:`kernelbench.importer.materialize`), or None."""
    meta_file = task_file.parent / "import.json"
    try:
        meta = json.loads(meta_file.read_text())
    except (OSError, ValueError):
        return None                         # a task file written elsewhere (--seed-kernel): it has its seed
    reason = meta.get("no_seed_reason") if isinstance(meta, dict) else None
    return str(reason) if reason else None
