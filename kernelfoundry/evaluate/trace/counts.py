"""The judge's side of the trace: raw per-program events -> weighted :class:`LaunchTrace` records.

Runs in the driver, which never imports candidate code.  The child reports what each
sampled program did, unweighted, with the loop executions and the trips they ran
(:mod:`record_trace`); here every event is weighted by the trips it stands for
(:mod:`trip_witness`: nested loops multiply; a witness trip stands in for middle samples
that do less than it), the unique footprint of a
program counts the 32-byte sectors it had not touched before (times the weight: a
trip that reads new data stands for the unsampled trips that would too), dots are
counted at the precision their operands were loaded at, and programs are combined
with :func:`program_weights` (first and last stand for themselves, the random
samples for the rest of the grid).  Every reference into the data channel and
every index is checked: a malformed report is refused, not trusted.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from .census import Census, CensusError, judge_census
from ...sandbox import BlobReader, ChannelError
from ...records import ConfigTrace, LaunchTrace, TensorTraffic
from .sample_spread import GROUPS, sample_groups, upper_margin
from .sector_runs import new_per_row, valid_rows
from .trip_witness import WORK_KINDS, WitnessError, parse_loops, trip_weights

SECTOR_BYTES = 32
#: A sparse estimate within this fraction of the dense count is the count (float rounding only).
EXACT = 1e-9
_LOAD_BYTES, _STORE_BYTES, _LOAD_SECTORS, _STORE_SECTORS, _UNIQUE_LOAD, _UNIQUE_STORE = range(6)
RANK_DTYPE = {1: "fp8", 2: "fp16", 3: "fp32", 4: "fp64"}
DTYPE_RANK = {"fp8e4nv": 1, "fp8e5": 1, "fp8e4b15": 1, "fp8e4b8": 1, "fp8e5b16": 1, "fp16": 2, "bf16": 2,
              "fp32": 3, "fp64": 4}
#: 8-bit integer dot operands rank with fp8: an int8 dot on data loaded as fp16/fp32 is scored at that rate.
INT_DOT_RANK = {"int8": 1, "uint8": 1}
OP_KINDS = ("elementwise", "transcendental", "reduction")


def sample_programs(num_programs: int, count: int, rng) -> list[int]:
    """Launch-order ids to trace: first, last and seeded-random ones (all if the grid is small)."""
    if num_programs <= count:
        return list(range(num_programs))
    picks = [0, num_programs - 1][:max(1, count)]
    picks += rng.sample(range(1, num_programs - 1), count - len(picks))
    return sorted(picks)


def program_weights(sampled: list[int], num_programs: int) -> list[float]:
    """Weights (summing to 1) that turn per-program counts into a grid-wide mean per program."""
    if len(sampled) >= num_programs or len(sampled) <= 2:
        return [1.0 / len(sampled)] * len(sampled)
    middle = len(sampled) - 2
    return [1.0 / num_programs if pid in (0, num_programs - 1) else (num_programs - 2) / (num_programs * middle)
            for pid in sampled]


def wave_widths(num_programs: int, limit: int) -> list[int]:
    """1, 2, 4, ... up to min(num_programs, limit)."""
    top = min(num_programs, limit)
    return [1 << i for i in range(top.bit_length()) if 1 << i <= top]


class MalformedTrace(ValueError):
    """The child's trace report does not hold together."""


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise MalformedTrace(what)


def own_work(accesses: np.ndarray, record: dict[str, Any], n_trips: int) -> np.ndarray:
    """``[n_trips, len(WORK_KINDS)]``: the unweighted work each trip id recorded itself."""
    work = np.zeros((n_trips, len(WORK_KINDS)))
    for kind, _tensor, _site, trip, elems, _n, _sectors in accesses.tolist():
        _require(kind in (0, 1, 2) and 0 <= trip < n_trips and elems >= 0, "an access record is malformed")
        work[int(trip), int(kind)] += elems
    for dot in record.get("dots", []):
        _require(isinstance(dot, list) and len(dot) == 9 and isinstance(dot[7], int) and 0 <= dot[7] < n_trips
                 and all(isinstance(v, int) and v >= 0 for v in dot[:4]), "a dot record is malformed")
        work[dot[7], 3] += 2.0 * dot[0] * dot[1] * dot[2] * dot[3]
    for op in record.get("ops", []):
        _require(isinstance(op, list) and len(op) == 3 and isinstance(op[0], int) and 0 <= op[0] < n_trips
                 and op[1] in (0, 1, 2) and isinstance(op[2], (int, float)) and math.isfinite(op[2]),
                 "an op record is malformed")
        work[op[0], 4 + op[1]] += float(op[2])
    return work


class ProgramCounts:
    """What one program did, weighted by loop sampling."""

    def __init__(self, n_tensors: int):
        self.traffic = np.zeros((n_tensors, 6))
        self.dot_flops: dict[str, float] = defaultdict(float)
        self.dot_shapes: set[tuple[int, int, int, str]] = set()
        self.dot_trip_bytes: dict[int, float] = defaultdict(float)
        self.ops = {k: 0.0 for k in OP_KINDS}
        self.max_block = 0
        self.loop_trips = 0.0
        self.witnessed: list[str] = []          # loops whose middle samples the witness trip replaced
        self.firsts: dict[int, list[tuple[int, int]]] = defaultdict(list)   # tensor -> (site, first sector)
        self.signatures: dict[int, int] = {}    # tensor -> hash of every sector the program loaded from it
        self.run_kind = "sparse"                # programs are compared for anchors within one run kind

    @property
    def total_bytes(self) -> float:
        return float(self.traffic[:, _LOAD_BYTES].sum() + self.traffic[:, _STORE_BYTES].sum())

    def loaded(self) -> set[int]:
        return {i for i in range(len(self.traffic)) if self.traffic[i, _LOAD_BYTES] > 0}


def count_program(record: dict[str, Any], tensors: list[dict[str, Any]], blob: BlobReader,
                  sparse_view: bool = False) -> ProgramCounts:
    """Weighted counts of one sampled program from its raw events (*sparse_view*: a dense program
    counted from its sparse-plan trips only, as the other programs were; otherwise the work of
    densely sampled long loops is counted at an upper bound, :mod:`sample_spread`)."""
    n_tensors = len(tensors)
    counts = ProgramCounts(n_tensors)
    accesses = blob.get(record["accesses"]).reshape(-1, 7) if record.get("accesses") else np.zeros((0, 7))
    runs = blob.get(record["runs"]) if record.get("runs") else np.zeros((0, 2), dtype=np.int64)
    n_runs, row_sectors = accesses[:, 5].astype(np.int64), accesses[:, 6].astype(np.int64)
    _require(valid_rows(runs, n_runs), "the sector runs are malformed or do not add up")
    ends = np.cumsum(n_runs)
    run_sectors = np.concatenate(([0], np.cumsum(runs[:, 1])))
    # a row's exact sector count lies between its run count and what its (possibly coarse) runs cover
    _require(bool(np.all((n_runs <= row_sectors) & (row_sectors <= run_sectors[ends] - run_sectors[ends - n_runs])
                         & ((n_runs == 0) == (row_sectors == 0)))), "a sector count disagrees with its runs")
    trips = record.get("trips", [])
    _require(isinstance(trips, list), "the trip list is malformed")
    try:
        weights, counts.loop_trips = trip_weights(record.get("execs", []), trips,
                                                  own_work(accesses, record, len(trips) + 1),
                                                  on_witness=counts.witnessed.append, sparse_view=sparse_view)
    except WitnessError as exc:
        raise MalformedTrace(str(exc)) from None
    # a dense count of a long loop is a sample: its work per sample group, for an upper bound (sample_spread)
    labels, sizes = sample_groups(*parse_loops(record.get("execs", []), trips)) if not sparse_view else (None, None)
    grouped = sizes is not None and sizes.sum() > 0
    g_bytes = np.zeros((GROUPS + 1, n_tensors, 2)) if grouped else None
    g_dots: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(GROUPS + 1))
    g_ops = {k: np.zeros(GROUPS + 1) for k in OP_KINDS}
    # per tensor, loads and stores: the rows' sector runs and weights, for the distinct count below
    touched: list[tuple[list, list]] = [([], []) for _ in range(n_tensors)]
    first_seen: set[tuple[int, int]] = set()
    for i, (kind, tensor, site, trip, elems, n_runs, _sectors) in enumerate(accesses.tolist()):
        _require(0 <= tensor < n_tensors and 0 <= trip < len(weights) and kind in (0, 1, 2) and elems >= 0,
                 "an access record is malformed")
        w = weights[trip]
        if sparse_view and w == 0:        # a trip only the dense run made: as if it had not run
            continue
        chunk = runs[ends[i] - n_runs:ends[i]]
        if kind != 1 and n_runs and (tensor, site) not in first_seen:      # the wave pass's anchor rule
            first_seen.add((tensor, site))
            counts.firsts[tensor].append((site, int(chunk[0, 0])))
        elem_bytes = tensors[tensor]["elem_bytes"]
        row = counts.traffic[tensor]
        for is_store in ((False, True) if kind == 2 else (kind == 1,)):
            row[_STORE_BYTES if is_store else _LOAD_BYTES] += elems * elem_bytes * w
            if grouped:
                g_bytes[labels[trip], tensor, int(is_store)] += elems * elem_bytes * w
            row[_STORE_SECTORS if is_store else _LOAD_SECTORS] += float(row_sectors[i]) * w
            touched[tensor][int(is_store)].append((chunk, w, float(row_sectors[i])))
    for tensor, per_kind in enumerate(touched):      # each row counts the sectors no earlier row touched
        for is_store, rows in enumerate(per_kind):
            if not rows:
                continue
            new, distinct, shift = new_per_row([chunk for chunk, _, _ in rows])
            row_w = np.array([w for _, w, _ in rows])
            # coarse runs over-state new sectors; no row adds more than it touched (two upper bounds)
            unique = min(float(np.dot(new, row_w)), float(np.dot([n for _, _, n in rows], row_w)))
            counts.traffic[tensor, _UNIQUE_STORE if is_store else _UNIQUE_LOAD] += SECTOR_BYTES * unique
            if not is_store and distinct.size:
                counts.signatures[tensor] = hash((shift, distinct.tobytes()))
    for dot in record.get("dots", []):
        _require(isinstance(dot, list) and len(dot) == 9, "a dot record is malformed")
        m, n, k, batch, dtype, precision, loaded_rank, trip, operand_bytes = dot
        _require(all(isinstance(v, int) and v >= 0 for v in (m, n, k, batch, loaded_rank, operand_bytes))
                 and isinstance(trip, int) and 0 <= trip < len(weights), "a dot record is malformed")
        flops = 2.0 * m * n * k * batch * weights[trip]
        own = DTYPE_RANK.get(str(dtype), INT_DOT_RANK.get(str(dtype), 3))
        rank = max(own, loaded_rank)                                # the precision its operands were loaded at
        scored = RANK_DTYPE.get(rank, "fp32") if rank > own else str(dtype)
        if scored == "fp32" and precision == "ieee":                # fp32 FMAs on the vector units
            counts.ops["elementwise"] += flops
            if grouped:
                g_ops["elementwise"][labels[trip]] += flops
        else:
            flops *= 3.0 if scored == "fp32" and precision == "tf32x3" else 1.0
            counts.dot_flops[scored] += flops
            if grouped:
                g_dots[scored][labels[trip]] += flops
        counts.dot_shapes.add((m, n, k, scored))
        if loaded_rank > 0 or str(dtype) not in DTYPE_RANK:    # operands fed from memory (ints: untagged)
            counts.dot_trip_bytes[trip] += operand_bytes       # what a pipeline stage holds
    for trip, kind, amount in record.get("ops", []):
        _require(isinstance(trip, int) and 0 <= trip < len(weights) and kind in (0, 1, 2), "an op record is malformed")
        counts.ops[OP_KINDS[kind]] += float(amount) * weights[trip]
        if grouped:
            g_ops[OP_KINDS[kind]][labels[trip]] += float(amount) * weights[trip]
    if grouped:                         # the upper bound of what the samples stand for
        margin = upper_margin(g_bytes, sizes)
        counts.traffic[:, _LOAD_BYTES] += margin[:, 0]
        counts.traffic[:, _STORE_BYTES] += margin[:, 1]
        for dtype, per in g_dots.items():
            counts.dot_flops[dtype] += float(upper_margin(per[:, None], sizes)[0])
        for kind, per in g_ops.items():
            counts.ops[kind] += float(upper_margin(per[:, None], sizes)[0])
    counts.max_block = int(record.get("max_block", 0))
    return counts


class DenseLift:
    """What a program's sparse loop samples missed, from its own dense run.

    A dense program records element counts (not addresses) in the trips off the sparse plan.  For
    each count (load and store bytes per tensor, dot flops per dtype, op elements per kind) its full
    count *d* is set against its sparse-view estimate *s*, and the program's count is scaled by
    ``d / s`` (or raised by *d* where ``s`` is 0): the sparse samples missed work that sits on
    unsampled trips (work on rare trips, say), or over-weighted a heavy sampled trip.  Bytes,
    sectors and distinct bytes of each tensor each have their own count (a dense run records sectors
    on every trip).  An honest loop whose trips do equal work has ``s == d``: nothing changes.
    """

    COLUMNS = (_LOAD_BYTES, _LOAD_SECTORS, _UNIQUE_LOAD, _STORE_BYTES, _STORE_SECTORS, _UNIQUE_STORE)

    def __init__(self, full: ProgramCounts, sparse: ProgramCounts):
        # (multiplier or 0.0 to add, the full count) per count, decided once from the dense program (it
        # records sectors on every trip: distinct bytes and sectors have counts of their own)
        self.traffic = []
        for i in range(full.traffic.shape[0]):
            for col in self.COLUMNS:
                factor = self._factor(full.traffic[i, col], sparse.traffic[i, col])
                if factor is not None:
                    self.traffic.append((i, col, factor, full.traffic[i, col]))
        self.dots = {d: (f, v) for d, v in full.dot_flops.items()
                     for f in [self._factor(v, sparse.dot_flops.get(d, 0.0))] if f is not None}
        self.ops = {k: (f, v) for k, v in full.ops.items() for f in [self._factor(v, sparse.ops.get(k, 0.0))]
                    if f is not None}

    @property
    def lifted(self) -> bool:
        return bool(self.traffic or self.dots or self.ops)

    @staticmethod
    def _factor(d: float, s: float) -> float | None:
        """Multiplier for a count whose full value is *d* and sparse estimate *s* (0.0: add *d*)."""
        if d <= 0 or abs(s - d) <= EXACT * d:
            return None
        return d / s if s > 0 else 0.0

    def apply(self, counts: ProgramCounts) -> None:
        for i, col, factor, full in self.traffic:
            counts.traffic[i, col] = counts.traffic[i, col] * factor if factor else counts.traffic[i, col] + full
        for dtype, (factor, full) in self.dots.items():
            old = counts.dot_flops.get(dtype, 0.0)
            counts.dot_flops[dtype] = old * factor if factor else old + full
        for kind, (factor, full) in self.ops.items():
            counts.ops[kind] = counts.ops[kind] * factor if factor else counts.ops[kind] + full


def same_counts(a: ProgramCounts, b: ProgramCounts) -> bool:
    """Whether two programs' counts agree (bytes, sectors, dot flops, ops) up to float rounding."""
    def close(x, y):
        return abs(x - y) <= EXACT * max(abs(x), abs(y))
    return (a.traffic.shape == b.traffic.shape and bool(np.all(np.abs(a.traffic - b.traffic)
                                                             <= EXACT * np.maximum(np.abs(a.traffic), np.abs(b.traffic))))
            and set(a.dot_flops) == set(b.dot_flops) and all(close(a.dot_flops[d], b.dot_flops[d]) for d in a.dot_flops)
            and all(close(a.ops[k], b.ops[k]) for k in OP_KINDS))


def same_work(a: ProgramCounts, b: ProgramCounts) -> bool:
    """Whether two runs of one program did the same work (bytes loaded and stored per tensor, dot flops,
    ops) up to float rounding.  Sector columns are left out: a sparse run skips trips, so a pointer it
    advances once per trip (``a_ptrs += BLOCK_K * stride``) points elsewhere on its later sampled trips
    than in a dense run, and where a ragged last trip straddles rows its sectors differ while its work
    does not (the dense run's counts, addresses and all, are the ones kept)."""
    cols = [_LOAD_BYTES, _STORE_BYTES]
    return same_counts(_only(a, cols), _only(b, cols))


def _only(c: ProgramCounts, cols: list[int]) -> ProgramCounts:
    out = ProgramCounts(len(c.traffic))
    out.traffic[:, cols] = c.traffic[:, cols]
    out.dot_flops, out.ops = c.dot_flops, c.ops
    return out


def unanchored(counts: list[ProgramCounts], n_tensors: int) -> set[int]:
    """Tensors whose wave anchors cannot be trusted: two sampled programs run alike (``run_kind``) with
    the same first sectors at every load site (the anchors say they read the same data) loaded different
    sectors at the same sampled trips.  Their footprint then assumes no sharing between programs."""
    out = set()
    for tensor in range(n_tensors):
        by_anchor: dict[tuple, int] = {}
        for c in counts:
            if tensor not in c.signatures:
                continue
            key = (c.run_kind, tuple(sorted(c.firsts.get(tensor, []))))
            if by_anchor.setdefault(key, c.signatures[tensor]) != c.signatures[tensor]:
                out.add(tensor)
                break
    return out


def footprint(wave: dict[str, Any], blob: BlobReader, num_programs: int, names: list[str],
              loaded: set[int], untrusted: set[int] = frozenset()) -> dict[str, list[list[int]]]:
    """For each loaded tensor, [[w, distinct anchor sectors of programs 0..w-1], ...] (all load sites);
    no points for *untrusted* tensors (see :func:`unanchored`) nor for those the wave pass found its
    anchors contested on (``record_trace.TraceSession._contested``)."""
    rows = blob.get(wave["anchors"]).reshape(-1, 4) if wave.get("anchors") else np.zeros((0, 4), dtype=np.int64)
    contested = wave.get("contested", [])
    _require(isinstance(contested, list) and all(isinstance(t, int) for t in contested),
             "a wave's contested tensors are malformed")
    untrusted = set(untrusted) | set(contested)       # anchors the programs' own loads deny
    count = int(wave.get("programs", 0))
    widths = wave_widths(num_programs, count) if count else []
    out: dict[str, list[list[int]]] = {}
    for tensor in sorted(loaded - set(untrusted)):
        mine = rows[rows[:, 1] == tensor]
        points = []
        for w in widths:
            points.append([w, int(np.unique(mine[mine[:, 0] < w][:, 3]).size)])
        out[names[tensor]] = points
    return out


def build_launch_trace(record: dict[str, Any], blob: BlobReader, dense: bool = True) -> LaunchTrace:
    """One :class:`LaunchTrace` from a child's launch record (``dense=False``: the driver asked for a
    provisional trace, every program counted from its sparse plan alone, none lifted)."""
    grid = record["grid"]
    _require(isinstance(grid, list) and len(grid) == 3 and all(isinstance(g, int) and g >= 0 for g in grid),
             "a launch grid is malformed")
    num_programs = grid[0] * grid[1] * grid[2]
    _require(record.get("num_programs") == num_programs, "a launch's program count disagrees with its grid")
    tensors = record["tensors"]
    names = [str(t["name"]) for t in tensors]
    programs = record["programs"]
    sampled = [int(p["pid"]) for p in programs]
    _require(all(0 <= p < max(num_programs, 1) for p in sampled) and len(set(sampled)) == len(sampled),
             "sampled programs are out of range")
    # every program is counted from its sparse-plan trips (addresses, sectors), then lifted by a dense
    # count (work the sparse trips missed: on rare trips, say): the lead's where its sparse view is the
    # lead's; its own (the child ran it again densely) where it differs
    counts = [count_program(p, tensors, blob, sparse_view=True) for p in programs]
    leads = [i for i, p in enumerate(programs) if p.get("lead") is True]
    _require(len(leads) == (1 if programs else 0), "a launch needs exactly one lead program")
    if not dense:               # provisional: what the driver asked for, whatever the child claims
        _require(not any(p.get("dense") is True for p in programs), "a provisional trace ran a program densely")
    else:
        _require(all(programs[i].get("dense") is True for i in leads), "the lead program was not run densely")
        lifts = []
        for p, c in zip(programs, counts):
            if p.get("dense") is True:
                lifts.append(DenseLift(count_program(p, tensors, blob), c))
            else:
                _require(same_counts(c, counts[leads[0]]), "a program whose sparse counts differ from the lead's "
                         "was not counted densely")
                lifts.append(None)
        for i, (p, c) in enumerate(zip(programs, counts)):      # lifted only once every decision is made
            (lifts[i] or lifts[leads[0]]).apply(c)
            # anchors are compared among programs run alike: a dense run's trips followed each other, so its
            # carried state (an advanced pointer) differs from a sparse run's, and the lead ran more trips
            c.run_kind = "lead" if i == leads[0] else "dense" if p.get("dense") is True else "sparse"
    weights = program_weights(sampled, num_programs) if sampled else []
    # the census: more planned work in the grid than the traced programs stand for scales their counts
    traced_work = float(sum(w * (1.0 + c.loop_trips) for w, c in zip(weights, counts)))
    try:
        census = (judge_census(record.get("census"), num_programs, len(sampled), traced_work, sampled, weights,
                               len(tensors)) if dense else Census())
    except CensusError as exc:
        raise MalformedTrace(str(exc)) from None
    spread_weights, weights = weights, [w * census.scale for w in weights]

    def mean(value) -> float:
        return float(sum(w * value(c) for w, c in zip(weights, counts)))

    traffic = {}
    for i, t in enumerate(tensors):
        total = sum((w * c.traffic[i] for w, c in zip(weights, counts)), np.zeros(6))
        load_f, store_f = census.traffic.get(i, (1.0, 1.0))      # planned bytes the census found beyond
        total[[_LOAD_BYTES, _LOAD_SECTORS, _UNIQUE_LOAD]] *= load_f
        total[[_STORE_BYTES, _STORE_SECTORS, _UNIQUE_STORE]] *= store_f
        traffic[names[i]] = TensorTraffic(
            dtype=str(t["dtype"]), elem_bytes=int(t["elem_bytes"]), tensor_bytes=int(t["storage_bytes"]),
            load_bytes=float(total[_LOAD_BYTES]), store_bytes=float(total[_STORE_BYTES]),
            load_sectors=float(total[_LOAD_SECTORS]), store_sectors=float(total[_STORE_SECTORS]),
            unique_load_bytes=float(total[_UNIQUE_LOAD]), unique_store_bytes=float(total[_UNIQUE_STORE]),
            role=str(t.get("role", "")),
            max_unique_load_bytes=max((float(c.traffic[i, _UNIQUE_LOAD]) for c in counts), default=0.0),
            coverage_load_factor=census.coverage.get(i, (1.0, 1.0))[0],
            coverage_store_factor=census.coverage.get(i, (1.0, 1.0))[1])
    dtypes = sorted({d for c in counts for d in c.dot_flops})
    per_program_bytes = [c.total_bytes for c in counts]
    mean_bytes = sum(w * c.total_bytes for w, c in zip(spread_weights, counts))   # sampled programs weighted
    loaded = set().union(*(c.loaded() for c in counts)) if counts else set()
    return LaunchTrace(
        kernel=str(record["kernel"]), grid=tuple(grid), num_programs=num_programs, sampled_programs=sampled,
        traffic=traffic,
        dot_flops={d: mean(lambda c, d=d: c.dot_flops.get(d, 0.0)) for d in dtypes},
        dot_shapes=sorted({s for c in counts for s in c.dot_shapes}),
        dot_operand_bytes=mean(lambda c: max(c.dot_trip_bytes.values(), default=0.0)),
        elementwise_ops=mean(lambda c: c.ops["elementwise"]),
        transcendental_ops=mean(lambda c: c.ops["transcendental"]),
        reduction_elems=mean(lambda c: c.ops["reduction"]),
        loop_trips=mean(lambda c: c.loop_trips),
        max_loop_trips=max(max((c.loop_trips for c in counts), default=0.0), census.max_loop_trips),
        max_block_elems=max((c.max_block for c in counts), default=0),
        program_bytes_spread=max(max(per_program_bytes) / mean_bytes if mean_bytes > 0 else 1.0, census.spread),
        footprint=footprint(record.get("wave", {}), blob, num_programs, names, loaded,
                            unanchored(counts, len(tensors))),
        census_programs=census.programs, census_scale=census.scale,
        signature=record.get("signature") if isinstance(record.get("signature"), dict) else None)


def build_config_trace(record: dict[str, Any], blob: BlobReader, dense: bool = True) -> ConfigTrace:
    """One :class:`ConfigTrace` from a child's (shape, config) record; raises MalformedTrace.
    ``dense=False``: the driver asked for a provisional trace (sparse loop plans only)."""
    try:
        launches = [build_launch_trace(l, blob, dense) for l in record["launches"]]
        arms = record.get("arms", [])
        _require(isinstance(arms, list) and all(isinstance(a, str) for a in arms), "the branch arms are malformed")
        fills = record.get("zero_fills", [])
        _require(isinstance(fills, list) and all(type(b) is int and b >= 0 for b in fills),
                 "the zero-filled allocations are malformed")
        return ConfigTrace(shape_index=int(record["shape_index"]), shape=dict(record["shape"]),
                           config=dict(record["config"]), launches=launches,
                           seconds=float(record.get("seconds", 0.0)), arms=list(arms),
                           zero_fill_bytes=[float(b) for b in fills], provisional=not dense)
    except (KeyError, TypeError, ValueError, IndexError, ChannelError, AttributeError) as exc:
        raise MalformedTrace(f"{type(exc).__name__}: {exc}") from None


def stored_output_bytes(trace: ConfigTrace) -> dict[str, float]:
    """Distinct bytes stored into each returned output, estimated for all programs of all launches."""
    out: dict[str, float] = defaultdict(float)
    for launch in trace.launches:
        for t in launch.traffic.values():
            if t.role.startswith("output:"):
                out[t.role] += min(t.unique_store_bytes * t.coverage_store_factor * launch.num_programs,
                                   float(t.tensor_bytes))
    return dict(out)


def loaded_input_bytes(trace: ConfigTrace) -> dict[str, float]:
    """Bytes loaded from each input, each program counting its own distinct sectors, over all programs
    of all launches (capped at the tensor): an honest kernel that reads all of an input reaches its size."""
    out: dict[str, float] = defaultdict(float)
    for launch in trace.launches:
        for t in launch.traffic.values():
            if t.role.startswith("input:"):
                out[t.role] += min(t.unique_load_bytes * t.coverage_load_factor * launch.num_programs,
                                   float(t.tensor_bytes))
    return dict(out)
