"""Parent selection: which elite to mutate next, with what inspirations and target cell.

Three strategies share one interface (``choose(archive, pool) -> Choice``):

* ``map-elites`` — the search proper.  Mixes exploitation (0.7: the best elite
  so far 0.3, softmax over log objective 0.4), exploration (0.2: uniform over
  occupied cells, weighted towards cells whose elite has been a parent less
  often) and uniform random picks (0.1); sometimes a crossover with an elite of
  another cell, sometimes a repair of a recent near-miss.  A parent whose edits keep
  coming back as duplicates of stored candidates is *exhausted*: another correct
  candidate that is not exhausted (a stepping stone, mostly one that lost its cell; by the
  same softmax) is mutated in its place.
* ``greedy`` — one lineage: always refine the best candidate so far.
* ``random`` — independent mutations of the seeds (best-of-N).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from .archive import Elite, KernelArchive

STRATEGIES = ("map-elites", "greedy", "random")
#: a parent whose proposals came back as duplicates this many times is exhausted
EXHAUSTED_AFTER = 3


@dataclass
class Choice:
    parent_id: int
    kind: str                                  # "mutate" | "crossover" | "fix"
    inspiration_ids: list[int] = field(default_factory=list)
    target_cell: dict | None = None            # {"cell": [...], "description": "..."}
    reason: str = ""                           # which rule picked it (for the log)


@dataclass
class SelectionState:
    """What selection knows beyond the archive: seeds, best so far, recent repairable failures."""

    seed_ids: list[int] = field(default_factory=list)
    best_id: int | None = None
    best_objective: float = -math.inf
    repairable: list[int] = field(default_factory=list)   # failed at correctness/trace, newest last
    correct: dict[int, float] = field(default_factory=dict)   # every passed candidate -> objective
    duplicates: dict[int, int] = field(default_factory=dict)  # parent id -> its proposals that were duplicates

    def note(self, cid: int, passed: bool, objective: float | None, gate: str | None) -> None:
        if passed and objective is not None:
            self.correct[cid] = objective
        if passed and objective is not None and objective > self.best_objective:
            self.best_id, self.best_objective = cid, objective
        elif not passed and gate in ("correctness", "trace", "load"):
            self.repairable.append(cid)
            del self.repairable[:-32]

    def note_duplicate(self, parent_id: int) -> None:
        """A proposal made from *parent_id* was a duplicate of a stored candidate."""
        self.duplicates[parent_id] = self.duplicates.get(parent_id, 0) + 1

    def exhausted(self, cid: int) -> bool:
        return self.duplicates.get(cid, 0) >= EXHAUSTED_AFTER


class Selector:
    """Picks parents according to a strategy; deterministic for a given seed."""

    def __init__(self, strategy: str = "map-elites", *, seed: int = 0, p_explore: float = 0.2,
                 p_random: float = 0.1, p_best: float = 0.3, p_crossover: float = 0.15, p_fix: float = 0.0,
                 n_inspirations: int = 2, temperature: float = 0.5):
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
        self.strategy = strategy
        self.rng = random.Random(seed)
        self.p_explore, self.p_random, self.p_best = p_explore, p_random, p_best
        self.p_crossover, self.p_fix = p_crossover, p_fix
        self.n_inspirations = n_inspirations
        self.temperature = temperature

    def choose(self, archive: KernelArchive, state: SelectionState) -> Choice:
        if self.strategy == "random" or not archive.num_elites:
            return Choice(parent_id=self.rng.choice(state.seed_ids), kind="mutate", reason="seed")
        if self.strategy == "greedy":
            return Choice(parent_id=state.best_id if state.best_id is not None else state.seed_ids[0],
                          kind="mutate", reason="best")
        elites = archive.elites()
        if state.repairable and self.rng.random() < self.p_fix:
            return Choice(parent_id=state.repairable.pop(), kind="fix", reason="repair")
        parent, reason = self._pick_parent(elites, archive, state)
        archive.record_visit(parent.cell)
        others = [e for e in elites if e.cell != parent.cell]
        inspirations = self._inspirations(others)
        target = self._target_cell(parent, archive)
        parent_id = parent.candidate_id
        if state.exhausted(parent_id):
            stone = self._stepping_stone(state, exclude={e.candidate_id for e in inspirations})
            if stone is not None:
                parent_id, reason = stone, f"stepping stone ({reason} elite #{parent_id} exhausted)"
        if others and self.rng.random() < self.p_crossover:
            mate = inspirations[0] if inspirations else self.rng.choice(others)
            return Choice(parent_id=parent_id, kind="crossover",
                          inspiration_ids=[mate.candidate_id] + [e.candidate_id for e in inspirations
                                                                 if e is not mate],
                          target_cell=target, reason=reason)
        return Choice(parent_id=parent_id, kind="mutate",
                      inspiration_ids=[e.candidate_id for e in inspirations], target_cell=target,
                      reason=reason)

    def _stepping_stone(self, state: SelectionState, exclude: set[int]) -> int | None:
        """A correct candidate that is not exhausted, by softmax over log objective (None: none left).

        Elites whose neighbourhood the mutator has used up (ties at the hardware limit keep an
        elementwise archive at three elites) would end the search early; candidates that lost
        their cell are one edit away from other kernels."""
        pool = [(cid, obj) for cid, obj in state.correct.items() if not state.exhausted(cid) and cid not in exclude]
        if not pool:
            return None
        return self._by_objective(pool, [obj for _, obj in pool])[0]

    def _by_objective(self, items: list, objectives: list[float]):
        """One of *items*, drawn by a softmax over log objective (temperature ``self.temperature``)."""
        logs = [math.log(max(obj, 1e-12)) for obj in objectives]
        top = max(logs)
        weights = [math.exp((v - top) / self.temperature) for v in logs]
        return self.rng.choices(items, weights=weights)[0]

    def _pick_parent(self, elites: list[Elite], archive: KernelArchive,
                     state: SelectionState) -> tuple[Elite, str]:
        u = self.rng.random()
        if u < self.p_random:
            return self.rng.choice(elites), "random"
        if u < self.p_random + self.p_explore:
            weights = [1.0 / math.sqrt(1.0 + archive.visits[e.cell]) for e in elites]
            return self.rng.choices(elites, weights=weights)[0], "explore"
        if u < self.p_random + self.p_explore + self.p_best:
            # Refine the best kernel so far: improvements from template and tiling edits compound
            # along one lineage, which pure softmax exploitation spreads too thin at small budgets.
            best = next((e for e in elites if e.candidate_id == state.best_id), None)
            return (best or max(elites, key=lambda e: e.objective)), "best"
        return self._by_objective(elites, [e.objective for e in elites]), "exploit"

    def _inspirations(self, others: list[Elite]) -> list[Elite]:
        if not others:
            return []
        ranked = sorted(others, key=lambda e: -e.objective)
        picks = ranked[:1]
        rest = ranked[1:]
        while rest and len(picks) < self.n_inspirations:
            picks.append(rest.pop(self.rng.randrange(len(rest))))
        return picks

    def _target_cell(self, parent: Elite, archive: KernelArchive) -> dict | None:
        empty = archive.empty_neighbours(parent.cell)
        if not empty:
            return None
        cell = self.rng.choice(empty)
        return {"cell": list(cell), "description": archive.spec.describe_cell(cell)}
