"""A KernelBench problem file -> a task (and a generated seed kernel), cached on disk.

The problem file runs only in the sandbox (:mod:`.inspect_job`: time and memory limits,
no network, no writes outside its temp dir); the driver receives plain JSON.  The task it
becomes is written as ``task.yaml`` (plus ``seed.py``) under a cache directory keyed by
the file's content, so ``evolve``, ``verify`` and ``bench`` load it like any task file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import TaskError
from .reference import sizes_of

def _importer_version() -> str:
    """A hash of this package's sources: a new importer or seed generator re-imports cached problems."""
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


IMPORTER_VERSION = _importer_version()
TOLERANCE = {"atol": 1e-2, "rtol": 1e-2}          # KernelBench's own correctness check
DEFAULT_HARDWARE = ["h100"]
JOB_MODULE = "kernelfoundry.kernelbench.inspect_job"


@dataclass
class Imported:
    """An imported problem: its task as plain data and its seed (or why there is none)."""

    task: dict[str, Any]
    seed_source: str | None
    no_seed_reason: str | None
    problem_source: str


def is_problem_file(path: Path) -> bool:
    return path.suffix == ".py"


def level_of(path: Path) -> int:
    """1, 2 or 3 from a ``level1``/``level2``/``level3`` directory on the path, else 1."""
    for part in reversed(path.resolve().parent.parts):
        m = re.fullmatch(r"level([123])", part)
        if m:
            return int(m.group(1))
    return 1


def task_name(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem) or "problem"


def _read(path: Path) -> str:
    if not path.exists():
        raise TaskError(f"problem file {path} does not exist.")
    if not path.is_file():
        raise TaskError(f"problem file {path} is not a file; give a KernelBench-style .py file.")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"problem file {path} cannot be read as UTF-8 text: {exc}.") from None


def inspect_problem(path: Path, source: str, *, seed: int = 0, timeout_s: float = 180.0) -> dict[str, Any]:
    """Run the sandboxed import job on *source*; its description, or TaskError with its reason."""
    from ..sandbox import GiB, SandboxLimits, run_sandboxed
    limits = SandboxLimits(wall_s=timeout_s, rss_bytes=6 * GiB, address_space_bytes=32 * GiB)
    outcome = run_sandboxed(JOB_MODULE, {"source": source, "filename": str(path), "seed": seed}, limits,
                            mode="spawn")
    if not outcome.ok or outcome.result is None:
        tail = (outcome.output_tail or "").strip().splitlines()[-3:]
        raise TaskError(f"problem file {path} cannot be imported: the import job {outcome.reason}"
                        + (f" ({' | '.join(tail)})" if tail else "") + ".")
    if "error" in outcome.result:
        raise TaskError(f"problem file {path} cannot be imported: {outcome.result['error']}.")
    return outcome.result


def import_problem(path: str | Path, *, seed: int = 0) -> Imported:
    """Import *path* (sandboxed) and generate its seed kernel."""
    from .seedgen import NoSeed, generate
    path = Path(path)
    source = _read(path)
    desc = inspect_problem(path, source, seed=seed)
    doc = _docstring(source)
    inputs = {}
    for s in desc["inputs"]:
        spec = {"shape": s["shape"], "dtype": s["dtype"]}
        if s.get("low") is not None:
            spec["low"], spec["high"] = s["low"], s["high"]
        elif s["dtype"] not in ("float32", "float16", "bfloat16", "float64", "bool"):
            raise TaskError(f"problem file {path} cannot be imported: integer input '{s['name']}' has no known "
                            "value range.")
        inputs[s["name"]] = spec
    task = {"name": task_name(path), "level": level_of(path),
            "description": doc or f"KernelBench-style problem {path.name}",
            "reference": desc["reference"], "inputs": inputs,
            "shapes": {"check": desc["check"], "target": [desc["symbols"]]},
            "tolerance": dict(TOLERANCE), "seeds": ["seed.py"], "hardware": list(DEFAULT_HARDWARE)}
    seed_source, reason = None, desc.get("graph_error")
    if reason is None:
        try:
            seed_source = generate(desc["graphs"], desc["trace_envs"], desc["inputs"],
                                   sizes_of(desc["symbols"], desc["inputs"]), desc["symbols"])
        except NoSeed as exc:
            reason = str(exc)
    return Imported(task=task, seed_source=seed_source, no_seed_reason=reason, problem_source=source)


def _docstring(source: str) -> str:
    import ast
    try:
        doc = ast.get_docstring(ast.parse(source)) or ""
    except SyntaxError:
        return ""
    return " ".join(doc.split())[:300]


def cache_root() -> Path:
    from .. import DEFAULT_ARCHIVES
    return Path(os.environ.get("KERNELFOUNDRY_KB_CACHE") or DEFAULT_ARCHIVES / ".kernelbench")


def write_task(imported: Imported, out: Path, *, seed_kernel: Path | None = None) -> Path:
    """Write *imported* as ``out`` (a task YAML) with its seed beside it; return *out*."""
    out.parent.mkdir(parents=True, exist_ok=True)
    task = dict(imported.task)
    header = [f"# Imported from a KernelBench-style problem by `kernelfoundry task import`.",
              "# The reference is the problem's own Model.forward; parameters and buffers are inputs."]
    if seed_kernel is not None:
        task["seeds"] = [os.path.relpath(seed_kernel.resolve(), out.parent.resolve())]
    elif imported.seed_source is not None:
        seed_path = out.with_name(out.stem + "_seed.py")
        seed_path.write_text(imported.seed_source)
        task["seeds"] = [seed_path.name]
    else:
        header.append(f"# No seed kernel was generated: {imported.no_seed_reason}. Write one and list it here.")
        task["seeds"] = [out.stem + "_seed.py"]
    text = "\n".join(header) + "\n" + yaml.safe_dump(task, sort_keys=False, width=110)
    out.write_text(text)
    return out


def materialize(path: str | Path, *, seed_kernel: str | Path | None = None, check_files: bool = True,
                allow_no_seed: bool = False) -> Path:
    """The cached task file of problem *path* (imported once per content); with *seed_kernel*
    the task's seed is that file.  Raises TaskError when a seed is needed and none exists, unless
    *allow_no_seed* (an LLM drafts the first kernel: docs/llm.md, "Drafts"; the reason is in
    ``import.json`` beside the task file)."""
    path = Path(path)
    source = _read(path)
    key = hashlib.sha256(f"{IMPORTER_VERSION}\0{path.resolve().parent.name}\0{source}".encode()).hexdigest()[:16]
    folder = cache_root() / f"{task_name(path)}-{key}"
    task_file, meta_file = folder / "task.yaml", folder / "import.json"
    if not task_file.is_file() or not meta_file.is_file():
        imported = import_problem(path)
        folder.mkdir(parents=True, exist_ok=True)
        write_task(imported, task_file)
        meta_file.write_text(json.dumps({"problem": str(path.resolve()), "no_seed_reason": imported.no_seed_reason}))
    meta = json.loads(meta_file.read_text())
    if seed_kernel is not None:
        seed_kernel = Path(seed_kernel)
        if not seed_kernel.is_file():
            raise TaskError(f"--seed-kernel {seed_kernel} does not exist (or is not a file).")
        data = yaml.safe_load(task_file.read_text())
        data["seeds"] = [str(seed_kernel.resolve())]
        custom = folder / f"task-seed-{hashlib.sha256(str(seed_kernel.resolve()).encode()).hexdigest()[:8]}.yaml"
        custom.write_text(yaml.safe_dump(data, sort_keys=False, width=110))
        return custom
    if check_files and meta.get("no_seed_reason") and not allow_no_seed:
        raise TaskError(f"problem file {path}: no starting kernel can be generated ({meta['no_seed_reason']}); "
                        "give one with --seed-kernel FILE, or let an LLM draft one with --model NAME "
                        "(see docs/kernelbench.md).")
    return task_file
