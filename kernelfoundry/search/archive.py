"""The MAP-Elites archive: a pyribs ``GridArchive`` holding kernel source per behaviour cell.

Cells are (tiling, memory pattern) with the fixed ranges and bins of
``kernelfoundry.evaluate.judge.descriptors`` — bins never move during or across runs.
The solution stored per cell is the kernel source text; the candidate id rides
along as an extra field so every elite links back to its row in the run store.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ribs.archives import GridArchive

# pyribs status codes returned by ``add``.
NOT_ADDED, IMPROVED, NEW_CELL = 0, 1, 2


@dataclass(frozen=True)
class ArchiveSpec:
    """Descriptor names, ranges, bins and per-bin labels (for plots and prompts)."""

    names: tuple[str, ...]
    ranges: tuple[tuple[float, float], ...]
    bins: tuple[int, ...]
    labels: dict[str, list[str]]

    @classmethod
    def default(cls) -> "ArchiveSpec":
        from ..evaluate import BIN_LABELS, DESCRIPTOR_BINS, DESCRIPTOR_NAMES, DESCRIPTOR_RANGES
        return cls(names=tuple(DESCRIPTOR_NAMES), ranges=tuple(tuple(r) for r in DESCRIPTOR_RANGES),
                   bins=tuple(DESCRIPTOR_BINS), labels={k: list(v) for k, v in BIN_LABELS.items()})

    def describe_cell(self, cell: tuple[int, ...]) -> str:
        parts = []
        for name, idx in zip(self.names, cell):
            labels = self.labels.get(name) or []
            parts.append(f"{name}={labels[idx]}" if idx < len(labels) else f"{name} bin {idx}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Elite:
    candidate_id: int
    source: str
    objective: float
    measures: tuple[float, ...]
    cell: tuple[int, ...]


class KernelArchive:
    """A thin wrapper over ``GridArchive`` that speaks candidate ids and cells."""

    def __init__(self, spec: ArchiveSpec | None = None, *, seed: int = 0):
        self.spec = spec or ArchiveSpec.default()
        self.grid = GridArchive(solution_dim=(), solution_dtype=object, dims=self.spec.bins,
                                ranges=self.spec.ranges, seed=seed,
                                extra_fields={"candidate_id": ((), np.int64)})
        self.visits = np.zeros(self.spec.bins, dtype=np.int64)   # times a cell's elite was a parent
        self._elites: list[Elite] | None = None                  # built on demand, dropped when a cell changes

    def measures(self, descriptors: dict[str, float]) -> np.ndarray:
        try:
            values = [float(descriptors[n]) for n in self.spec.names]
        except KeyError as exc:
            raise ValueError(f"descriptors lack {exc.args[0]!r}; need {self.spec.names}") from None
        # Clip into range so extreme kernels land in the edge bins instead of being dropped.
        lo = np.array([r[0] for r in self.spec.ranges])
        hi = np.array([r[1] for r in self.spec.ranges])
        return np.clip(np.array(values), lo, hi - 1e-9)

    def cell_of(self, descriptors: dict[str, float]) -> tuple[int, ...]:
        grid_index = self.grid.index_of_single(self.measures(descriptors))
        return tuple(int(i) for i in np.unravel_index(int(grid_index), self.spec.bins))

    def add(self, candidate_id: int, source: str, objective: float, descriptors: dict[str, float]) -> int:
        """Offer a passed candidate; returns 0 (not added), 1 (improved a cell) or 2 (new cell)."""
        if objective is None or not np.isfinite(objective):
            return NOT_ADDED
        result = self.grid.add_single(source, float(objective), self.measures(descriptors),
                                      candidate_id=int(candidate_id))
        status = int(result["status"])
        if status != NOT_ADDED:
            self._elites = None
        return status

    def elites(self) -> list[Elite]:
        """Every cell's elite (a fresh list; the elites are rebuilt only after a cell changed)."""
        if self._elites is None:
            data = self.grid.data()
            cells = np.stack(np.unravel_index(np.asarray(data["index"], dtype=np.int64), self.spec.bins), axis=1)
            self._elites = [Elite(candidate_id=int(cid), source=str(src), objective=float(obj),
                                  measures=tuple(float(m) for m in meas), cell=tuple(int(i) for i in cell))
                            for src, obj, meas, cid, cell in zip(data["solution"], data["objective"],
                                                                 data["measures"], data["candidate_id"], cells)]
        return list(self._elites)

    def elite_in(self, cell: tuple[int, ...]) -> Elite | None:
        for e in self.elites():
            if e.cell == tuple(cell):
                return e
        return None

    def record_visit(self, cell: tuple[int, ...]) -> None:
        self.visits[tuple(cell)] += 1

    @property
    def num_elites(self) -> int:
        return int(self.grid.stats.num_elites)

    @property
    def coverage(self) -> float:
        return float(self.grid.stats.coverage)

    @property
    def qd_score(self) -> float:
        # Objectives (speedups) are positive, so the plain sum over elites is the QD-score.
        return float(self.grid.stats.qd_score) if self.num_elites else 0.0

    @property
    def best(self) -> Elite | None:
        elites = self.elites()
        return max(elites, key=lambda e: e.objective) if elites else None

    def empty_neighbours(self, cell: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Unoccupied cells adjacent (in one descriptor, by one bin) to *cell*."""
        occupied = {e.cell for e in self.elites()}
        out = []
        for axis, n in enumerate(self.spec.bins):
            for step in (-1, 1):
                idx = list(cell)
                idx[axis] += step
                if 0 <= idx[axis] < n and tuple(idx) not in occupied:
                    out.append(tuple(idx))
        return out
