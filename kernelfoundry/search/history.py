"""Read a finished (or running, or killed) run back from its store: archive, curves, task."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..store import RunStore
from ..task import Task, task_from_dict
from .archive import ArchiveSpec, KernelArchive
from .rundir import existing_run_dir, open_run_store


def spec_to_meta(spec: ArchiveSpec) -> dict[str, Any]:
    return {k: (list(map(list, v)) if k == "ranges" else v) for k, v in asdict(spec).items()}


def spec_from_meta(data: dict[str, Any] | None) -> ArchiveSpec:
    if not data:
        return ArchiveSpec.default()
    return ArchiveSpec(names=tuple(data["names"]), ranges=tuple(tuple(r) for r in data["ranges"]),
                       bins=tuple(data["bins"]), labels={k: list(v) for k, v in data["labels"].items()})


@dataclass
class RunView:
    run_dir: Path
    store: RunStore
    task: Task
    config: dict[str, Any]
    archive: KernelArchive

    def close(self) -> None:
        self.store.close()


def open_run(run_dir: str | Path) -> RunView:
    """Open RUN_DIR and rebuild its archive from the stored candidates (in id order)."""
    run_dir = existing_run_dir(Path(run_dir))
    store = open_run_store(run_dir)
    task = task_from_dict(store.get_meta("task"), check_files=False)
    archive = KernelArchive(spec_from_meta(store.get_meta("archive_spec")))
    for row in store.iter_candidates(passed_only=True):
        if row.descriptors and row.objective is not None:
            archive.add(row.id, row.source, row.objective, row.descriptors)
    return RunView(run_dir=run_dir, store=store, task=task, config=store.get_meta("config") or {}, archive=archive)


@dataclass
class Curves:
    n: list[int]
    best: list[float]
    coverage: list[float]
    qd_score: list[float]


def progress_curves(store: RunStore, spec: ArchiveSpec) -> Curves:
    """Best objective, coverage and QD-score after each evaluated candidate."""
    archive = KernelArchive(spec)
    curves = Curves([], [], [], [])
    best = float("nan")
    for i, row in enumerate(store.iter_candidates(columns="id, source, passed, objective, descriptors"), 1):
        if row.passed and row.descriptors and row.objective is not None:
            archive.add(row.id, row.source, row.objective, row.descriptors)
            best = row.objective if not best == best or row.objective > best else best
        curves.n.append(i)
        curves.best.append(best)
        curves.coverage.append(archive.coverage)
        curves.qd_score.append(archive.qd_score)
    return curves
