"""The census: how much loop work every program of a launch plans, from a large random sample.

The trace counts a few programs of each launch in detail (first, last and seeded-random ones), so a
kernel could leave most of the grid light and give a rare program (one in 64, say) the work of many
(``sample_dodging``): the detailed samples are light, and where the output is small and programs
re-read their inputs, output and input coverage hold.  The census runs many more programs, each with
every ``for`` loop cut to its first trip (as the wave pass does: cheap), and records the loops they
entered with their full trip counts.  The judge turns each census program into its planned work,
``1 + `` its loop trips (a nested loop counts once per trip of the loops around it), and sets the
census mean against the traced programs' weighted mean of the same measure: where the census
finds more planned work than the traced programs stand for, the launch's counts are scaled up to it.
An honest kernel whose programs plan equal work is unchanged (the two means agree exactly).  A
candidate whose kernels have no loop at all needs no census (its programs differ by branches only).
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .trip_witness import WitnessError, parse_loops

#: Programs a census runs per launch, at most (all of them on a smaller grid).
CENSUS_PROGRAMS = 256
#: The census scales a launch's counts only when its mean planned work exceeds the traced programs'
#: by more than this fraction (their estimate is a weighted sample too).
CENSUS_TOLERANCE = 0.05
#: The census mean a sample stands for is its upper confidence bound, mean + this many standard errors:
#: a kernel with one heavy program in 64 is found 4 times in 256 on average but 2 or fewer times in a
#: quarter of the draws, which scored it up to 1.39x its honest twin (red team, sum_dim, seed 1).  Equal
#: programs have no spread and are unchanged; honest programs of unequal work (causal attention) are
#: charged a few percent more.
CENSUS_SIGMAS = 2.0


class CensusError(ValueError):
    """A census record does not hold together."""


def kernels_have_loops(source: str) -> bool:
    """Whether a ``for`` or ``while`` loop appears in a jit function of *source* (True where that cannot
    be told: no jit function found, or the source does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True
    kernels = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
               and any("jit" in ast.unparse(d) for d in f.decorator_list)]
    return not kernels or any(isinstance(n, (ast.For, ast.While)) for f in kernels for n in ast.walk(f))


def census_pids(num_programs: int, traced: int, rng: random.Random, loops: bool = True,
                limit: int = CENSUS_PROGRAMS) -> list[int]:
    """The programs a census runs: none where the trace ran all *traced* programs of the grid or the
    kernels have no loops, all of a small grid, else *limit* seeded-random ones."""
    if num_programs <= traced or not loops:
        return []
    if num_programs <= limit:
        return list(range(num_programs))
    return sorted(rng.sample(range(num_programs), limit))


def run_census(pids: list[int], run_one: Callable[[int], tuple[list, list, list]], loops: bool = True,
               traced: list[int] = ()) -> dict[str, Any]:
    """The census record of a launch: ``run_one(pid)`` runs a program with loops cut to their first
    trip and returns its loop executions, trips (``CONTROL.execs``/``trips`` as the trace records) and
    bytes moved per tensor; *loops*: whether the candidate's kernels have any.  The *traced* programs
    are run the same way (their bytes only), so the census's bytes can be set against theirs."""
    return {"loops": loops, "programs": [[pid, *run_one(pid)] for pid in pids],
            "traced": [[pid, *run_one(pid)] for pid in traced]}


def _stands_for(execs: list[Any], trips: list[Any]) -> tuple[list[Any], list[float]]:
    """The loops of a census run and, per trip id, the real trips it stands for (trip 0: the program)."""
    try:
        loops, trip_list = parse_loops(execs, trips)
    except WitnessError as exc:
        raise CensusError(f"a census program's loops are malformed: {exc}") from None
    stands_for = [1.0] * (len(trip_list) + 1)
    for t, (e, _) in enumerate(trip_list, start=1):     # parents come before their trips
        _, kind, n, parent, _, _ = loops[e]
        stands_for[t] = stands_for[parent] * (n if kind == "for" else 1)
    return loops, stands_for


def _work(loops: list[Any], stands_for: list[float]) -> float:
    return 1.0 + sum(float(n) * stands_for[parent] for _, _, n, parent, _, _ in loops)


def planned_work(execs: list[Any], trips: list[Any]) -> float:
    """A program's planned work: 1 + the trips its loops would make, from a run whose loops took their
    first trips only (that trip stands for all *n*, so a nested loop counts once per trip of the loops
    around it)."""
    return _work(*_stands_for(execs, trips))


def program_bytes(stands_for: list[float], io: Any, n_tensors: int) -> tuple[np.ndarray, np.ndarray]:
    """A census run's bytes per tensor, ``[tensor, (loaded, written)]``: as run (loops cut to their first
    trip) and as planned (each trip's bytes times the trips it stands for, from :func:`_stands_for`)."""
    ran, planned = np.zeros((n_tensors, 2)), np.zeros((n_tensors, 2))
    if not isinstance(io, list):
        raise CensusError("a census program's bytes are malformed")
    for row in io:
        if not (isinstance(row, list) and len(row) == 4 and all(isinstance(v, int) and v >= 0 for v in row)
                and row[0] < n_tensors and row[1] < len(stands_for)):
            raise CensusError("a census program's bytes are malformed")
        ran[row[0]] += row[2:]
        planned[row[0]] += np.array(row[2:], dtype=float) * stands_for[row[1]]
    return ran, planned


@dataclass(frozen=True)
class Census:
    """What a launch's census found: the programs it ran, the factor for the traced programs' counts,
    and the heaviest program's planned work over the mean (1.0 where the census ran nothing);
    *traffic*: tensor index -> (load, store) factor for that tensor's counts on top of *scale* (see
    :func:`traffic_factors`); *coverage*: tensor index -> (load, store) factor for the coverage estimates
    on top of those (see :func:`coverage_factors`)."""

    programs: int = 0
    scale: float = 1.0
    spread: float = 1.0
    max_loop_trips: float = 0.0
    coverage: dict[int, tuple[float, float]] = field(default_factory=dict)
    traffic: dict[int, tuple[float, float]] = field(default_factory=dict)


def coverage_factors(census_ran: list[np.ndarray], traced_ran: list[np.ndarray], weights: list[float],
                     traffic: dict[int, tuple[float, float]] | None = None,
                     scale: float = 1.0) -> dict[int, tuple[float, float]]:
    """Per tensor, how many times the census programs' mean bytes (loaded, written) exceed the traced
    programs' weighted mean, both run with loops cut alike, beyond the factors already applied to the
    tensor's counts (*scale* for all, *traffic* per tensor; at least 1).

    The coverage checks extrapolate the traced programs' distinct bytes to the grid; a few samples of a
    tiled grid that catch an edge tile (a GEMM's last column of tiles at a shape the tile does not
    divide stores 6% of a tile) understate what the grid writes.  The census's hundreds of random
    programs measure the same quantity with far less noise, so the estimate is corrected by the ratio;
    a grid whose programs really write little is written little by the census programs too."""
    out = {}
    for i, (load, store) in _ratios(census_ran, traced_ran, weights).items():
        done = (traffic or {}).get(i, (1.0, 1.0))
        load, store = max(1.0, load / (done[0] * scale)), max(1.0, store / (done[1] * scale))
        if load > 1.0 + CENSUS_TOLERANCE or store > 1.0 + CENSUS_TOLERANCE:
            out[i] = (load, store)
    return out


def _ratios(census_rows: list[np.ndarray], traced_rows: list[np.ndarray], weights: list[float],
            over: float = 1.0) -> dict[int, tuple[float, float]]:
    """Per tensor, the census mean over the traced programs' weighted mean, divided by *over*, at least
    1; only tensors where a direction exceeds 1 + :data:`CENSUS_TOLERANCE`."""
    if not census_rows or not traced_rows:
        return {}
    census_mean = np.mean(census_rows, axis=0)
    traced_mean = sum((w * t for w, t in zip(weights, traced_rows)), np.zeros_like(census_mean))
    ratio = np.where(traced_mean > 0, census_mean / np.maximum(traced_mean, 1e-300), 1.0) / over
    ratio = np.maximum(ratio, 1.0)
    return {i: (float(ratio[i, 0]), float(ratio[i, 1])) for i in range(ratio.shape[0])
            if ratio[i, 0] > 1.0 + CENSUS_TOLERANCE or ratio[i, 1] > 1.0 + CENSUS_TOLERANCE}


def traffic_factors(census_planned: list[np.ndarray], traced_planned: list[np.ndarray], weights: list[float],
                    scale: float) -> dict[int, tuple[float, float]]:
    """Per tensor, how far the census programs' planned bytes (each trip's bytes times the trips it
    stands for) exceed the traced programs', beyond the *scale* their planned trips already applied.

    Planned trips miss work that is not more trips: wider trips, or straight-line loads in a few
    programs (one program in 64 reading four times as much: the traced programs are light, the census
    finds the heavy ones).  Planned bytes see it; the tensor's counts are scaled up by the excess."""
    return _ratios(census_planned, traced_planned, weights, over=scale)


def judge_census(record: Any, num_programs: int, traced: int, traced_work: float,
                 sampled: list[int] = (), weights: list[float] = (), n_tensors: int = 0) -> Census:
    """The census of a launch from its record, the number of programs the trace ran and their weighted
    mean planned work (``1 + loop_trips``); *sampled*, *weights*: the traced programs and their weights,
    *n_tensors*: the launch's tensors (for the coverage factors); raises :class:`CensusError` on a
    malformed record."""
    programs = record.get("programs") if isinstance(record, dict) else None
    loops = record.get("loops") if isinstance(record, dict) else None
    if not isinstance(programs, list) or not isinstance(loops, bool):
        raise CensusError("the census record is malformed")
    if not loops and abs(traced_work - 1.0) > 1e-9:
        raise CensusError("the census was skipped for kernels without loops, but the traced programs ran loops")
    pids = [p[0] if isinstance(p, list) and len(p) == 4 else None for p in programs]
    if not all(isinstance(p, int) and 0 <= p < max(num_programs, 1) for p in pids) or len(set(pids)) != len(pids):
        raise CensusError("census programs are out of range or repeated")
    expected = 0 if num_programs <= traced or not loops else min(num_programs, CENSUS_PROGRAMS)
    if len(programs) != expected:
        raise CensusError(f"the census ran {len(programs)} programs of {num_programs}, not {expected}")
    if not programs:
        return Census()
    parsed = [_stands_for(execs, trips) for _, execs, trips, _ in programs]      # each program parsed once
    work = np.array([_work(loops, stands_for) for loops, stands_for in parsed])
    mean = float(work.mean())
    bound = mean                       # the whole grid ran: exact; a sample: its upper confidence bound
    if len(programs) < num_programs and len(programs) > 1:
        bound += CENSUS_SIGMAS * float(work.std(ddof=1)) / len(programs) ** 0.5
    scale = bound / traced_work if traced_work > 0 and bound > (1.0 + CENSUS_TOLERANCE) * traced_work else 1.0
    traced_rows = record.get("traced")
    if not isinstance(traced_rows, list) or [r[0] if isinstance(r, list) and len(r) == 4 else None
                                             for r in traced_rows] != list(sampled):
        raise CensusError("the census did not run the traced programs")
    census_bytes = [program_bytes(stands_for, p[3], n_tensors) for p, (_, stands_for) in zip(programs, parsed)]
    traced_bytes = [program_bytes(_stands_for(execs, trips)[1], io, n_tensors) for _, execs, trips, io in traced_rows]
    traffic = traffic_factors([b[1] for b in census_bytes], [b[1] for b in traced_bytes], list(weights), scale)
    coverage = coverage_factors([b[0] for b in census_bytes], [b[0] for b in traced_bytes], list(weights), traffic,
                                scale)
    return Census(programs=len(programs), scale=scale, spread=float(work.max()) / mean,
                  max_loop_trips=float(work.max()) - 1.0, coverage=coverage, traffic=traffic)
