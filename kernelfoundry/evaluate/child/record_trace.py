"""Inside the sandboxed child: record raw events of sampled programs at the target shapes.

For each target shape x kernel config, ``launch`` runs on inputs holding real values
(:func:`inputs.trace_inputs`), under the dispatch guard, with for-loops sampled
(:mod:`loop_hooks`).  Each kernel launch runs a few program ids (first, last,
seeded-random ones) and records, per program, every access (kind, tensor, source
line, loop trip, unmasked elements, the distinct 32-byte sectors it touches as runs), every
dot (shape, operand dtype, precision, the precision its operands were loaded at),
op counts per loop trip, and the loop executions with the trips they ran.  A wave
pass then runs the first programs in launch order and records, per program, the
first sector each load site touches per input tensor, stopping a program once
every site the sampled programs used has been seen, and a census runs many seeded-random
programs with loops cut to their first trip, recording the loops they would make
(:mod:`census`).  Counting, weighting,
footprints, coverage and scoring all happen in the judge (:mod:`trace_judge`).
Each launch also records what the compile gate needs, from Triton's own argument
binder: argument kinds, dtypes, divisibility by 16, constexpr values, launch options.
"""

from __future__ import annotations

import ctypes
import random
import time
import warnings
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from ...candidate import config_key
from ...task import Task
from ...harness.arms import RECORDER
from ..trace.census import census_pids, kernels_have_loops, run_census
from .aperiodic import AperiodicInputs
from ...sandbox import BlobReader, BlobWriter
from ...harness.guard import DispatchGuard
from ...harness.inputs import trace_inputs
from ...harness.loader import CandidateTimeout, describe_exception, time_limit
from ..trace.sector_runs import coarse_runs, distinct
from ...harness.tiled import release_all
from ..trace.counts import SECTOR_BYTES, count_program, same_counts, same_work, sample_programs
from .trace_hooks import PRECISION_RANK, LaunchContext, RuleViolation, Session, active, dtype_name
from ..trace.loop_plan import DENSE_TRIPS, DENSE_TRIPS_OTHERS
from .loop_hooks import CONTROL
from .loop_limit import LoopLimit
from .wave_reuse import WaveReuse, launch_key
from .program_outputs import ProgramOutputs, loops_complete, resolve as resolve_outputs
from ..contract.span_shape import GRID_PROGRAMS

#: The wave pass covers the first this-many programs in launch order.
WAVE_PROGRAMS = 256
#: Members of each group of wave programs with equal anchors checked against the group's first.
SHARING_CHECKS = 3
KINDS = {"load": 0, "store": 1, "atomic": 2}
OP_KINDS = {"elementwise": 0, "transcendental": 1, "reduction": 2}
#: Bytes per element of a loaded-precision rank (trace_hooks.PRECISION_RANK).
RANK_BYTES = {1: 1, 2: 2, 3: 4, 4: 8}


class TraceFailure(Exception):
    """Tracing one (shape, config) failed; the message is the reason."""


class _ProgramDone(BaseException):
    """Raised from a hook to end a wave-pass program early (BaseException: passes the interpreter)."""


class ProgramEvents:
    """What one sampled program did, unweighted (the judge applies the loop weights)."""

    def __init__(self, pid: int):
        self.pid = pid
        # kind, tensor, site, trip, elems, n_runs, sectors (exact; the runs may be coarse)
        self.accesses: list[tuple[int, int, int, int, int, int, int]] = []
        self.runs: list[np.ndarray] = []        # per access row: its sectors as runs (start, length)
        self.on_plan: list[bool] = []           # per access row: on the sparse plan (off it: a dense run's extra trip)
        self.dots: list[list[Any]] = []
        self.ops: dict[tuple[int, int], float] = {}
        self.max_block = 0
        self.off_plan_runs = 0                  # sector runs recorded on trips off the sparse plan


_NO_RUNS = np.zeros((0, 2), dtype=np.int64)
#: Exact sector runs a dense run records on trips off the sparse plan, at most (4 MB of the data file:
#: a coalesced block access is one run, so this binds only scattered accesses).  Past it the runs are
#: coarse (:func:`coarse_shift`): an upper bound on distinct sectors, never a drop to counts only.
OFF_PLAN_RUNS = 1 << 18
#: Past the budget, the block a coarse run is made of grows 4x for every this-many more runs.
COARSE_STEP = 1 << 17


def coarse_shift(recorded: int) -> int:
    """The block shift (blocks of 2**shift sectors) for the next access row of a dense run that has
    recorded *recorded* sector runs off the sparse plan: 0 (exact) within the budget, then 4, 16,
    64, ... sectors per block, so a program's runs stay a few MB however it scatters."""
    if recorded < OFF_PLAN_RUNS:
        return 0
    return min(62, 2 * (1 + (recorded - OFF_PLAN_RUNS) // COARSE_STEP))


def first_sectors(accesses: np.ndarray, runs: list[np.ndarray], on_plan: list[bool]) -> dict[tuple[int, int], int]:
    """(tensor, load site) -> the lowest sector of that site's first load on the sparse plan in one
    program (*runs*: one array of sector runs per access row; *on_plan*: whether the row is on the
    sparse plan)."""
    if not len(runs) == len(on_plan) == len(accesses):
        raise ValueError(f"{len(accesses)} access rows but {len(runs)} sector run lists")
    firsts: dict[tuple[int, int], int] = {}
    for row, row_runs, on in zip(accesses.tolist(), runs, on_plan):
        key = (row[1], row[2])
        if on and row[0] != KINDS["store"] and key not in firsts and row_runs.shape[0]:
            firsts[key] = int(row_runs[0, 0])
    return firsts


def wave_targets(per_program: list[dict[tuple[int, int], int]]) -> set[tuple[int, int]]:
    """The load sites the wave pass must see in each program: per tensor, every site whose first sectors
    over the sampled programs differ from those of an earlier site (a second pass over the same rows
    adds nothing; a dead load at a fixed address next to the real loads does not hide them)."""
    targets: set[tuple[int, int]] = set()
    keys = sorted({k for p in per_program for k in p}, key=lambda k: (k[0], min(
        (i for i, p in enumerate(per_program) if k in p), default=0)))
    kept: dict[int, list[tuple]] = {}
    for tensor, site in keys:
        vector = tuple(p.get((tensor, site)) for p in per_program)
        if vector not in kept.setdefault(tensor, []):
            kept[tensor].append(vector)
            targets.add((tensor, site))
    return targets


@contextmanager
def recording_signatures(guard: DispatchGuard, sink: list[dict[str, Any]]):
    """Record each kernel launch's compile signature (Triton's own binder: divisibility by 16, ints
    equal to 1, constexprs, launch options) while the launches run as usual."""
    from triton.runtime.interpreter import InterpretedFunction
    from ...compiler.capture import signature_of_launch
    from ...compiler import SignatureError
    original = InterpretedFunction.run

    def run(kernel, *args, grid, warmup, **kwargs):
        if not warmup:
            with guard.paused():
                try:
                    sink.append(signature_of_launch(kernel, args, kwargs).to_dict())
                except (SignatureError, TypeError, ValueError) as exc:
                    sink.append({"kernel": getattr(getattr(kernel, "fn", None), "__name__", "?"),
                                 "unsupported": str(exc)[:300]})
        return original(kernel, *args, grid=grid, warmup=warmup, **kwargs)

    InterpretedFunction.run = run
    try:
        yield
    finally:
        InterpretedFunction.run = original


class TraceSession(Session):
    """Records sampled programs of every launch and their wave footprint anchors."""

    count_ops = True
    track_precision = True
    needs_sites = True

    def __init__(self, trace_programs: int, rng: random.Random, *, guard: DispatchGuard, candidate_file: str,
                 blob: BlobWriter, wave_programs: int = WAVE_PROGRAMS, has_loops: bool = True, dense: bool = True,
                 wave_reuse: WaveReuse | None = None):
        super().__init__(guard=guard, candidate_file=candidate_file)
        self.trace_programs = max(1, int(trace_programs))
        self.dense = dense                      # False: every sampled program runs its sparse plan only
        # provisional traces of one job share the waves of launches that are the same (wave_reuse.py)
        self.wave_reuse = wave_reuse if not dense else None
        self.rng = rng
        self.blob = blob
        self.wave_programs = wave_programs
        self.launches: list[dict[str, Any]] = []
        self._program: ProgramEvents | None = None
        self._wave_targets: set[tuple[int, int]] = set()
        self._wave_seen: set[tuple[int, int]] | None = None
        self._wave_rows: list[tuple[int, int, int, int]] = []
        self._wave_pid = 0
        self._sharing: dict[int, set[int]] | None = None    # a sharing check runs: tensor -> sectors loaded
        self._census = False                    # the census runs: record loops only
        self._census_io: dict[tuple[int, int], list[int]] = {}   # census: (tensor, trip) -> [loaded, written]
        self._has_loops = has_loops             # whether the candidate's kernels have loops (a census needs them)
        self._tensor_index: dict[str, int] = {}
        self._writes: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None   # (storage bytes, index, old)
        self._views: dict[int, np.ndarray] = {}                             # storage start -> its bytes
        self._capture: ProgramOutputs | None = None     # a program run in full: what it stores, for the judge

    def launch(self, ctx: LaunchContext) -> None:
        self._tensor_index = {t.name: i for i, t in enumerate(ctx.tensors.tensors)}
        self._views = {}
        tensors = [{"name": t.name, "dtype": t.dtype, "elem_bytes": t.elem_bytes, "storage_bytes": t.storage_bytes,
                    "numel": t.numel, "start": t.start, "data_offset": t.data_ptr - t.start}
                   for t in ctx.tensors.tensors]
        sampled = sample_programs(ctx.num_programs, self.trace_programs, self.rng)
        # the lead, run in full, has its outputs checked against the reference (program_outputs.py): it is
        # one of the programs past those the checks' grid-span shape launches, where the launch has them
        late = [p for p in sampled if p >= GRID_PROGRAMS]
        lead = random.Random(f"{CONTROL.seed}:dense:{len(self.launches)}").choice(late or sampled) if sampled else -1
        # the lead runs densely first; another program runs sparsely, and again densely (fewer trips)
        # when its sparse counts differ from the lead's: the judge lifts each program by the dense count
        # of a program that did the same sampled work (counts.build_launch_trace)
        records: dict[int, dict[str, Any]] = {}
        lead_view = None
        checked: list[dict[str, Any]] = []        # programs run in full: their stored outputs (program_outputs.py)
        for pid in ([lead] + [p for p in sampled if p != lead]) if sampled else []:
            if not self.dense:                  # a provisional trace: the sparse plan only, no dense re-runs
                record = self._run_program(ctx, pid, 0)
                record["lead"] = pid == lead
                records[pid] = record
                continue
            if pid == lead:
                record = self._run_captured(ctx, pid, DENSE_TRIPS, checked)
            else:
                record = self._run_program(ctx, pid, 0, keep_writes=True)
            if pid == lead:
                lead_view = self._sparse_view(record, tensors)
            elif not same_counts(view := self._sparse_view(record, tensors), lead_view):
                self._undo_writes()      # the re-run starts from the memory the first run found
                record = self._run_captured(ctx, pid, DENSE_TRIPS_OTHERS, checked)
                if not same_work(self._sparse_view(record, tensors), view):
                    self.fail(f"program {pid} of {ctx.kernel} did different work when the trace ran it again from "
                              "the same memory; make a program's work follow from its inputs and ids")
            record["lead"] = pid == lead
            records[pid] = record
        programs = [self._commit(records[pid]) for pid in sampled]
        self._wave_targets = wave_targets([p.pop("_firsts") for p in programs])
        wave = self._wave_or_reused(ctx) if self._wave_targets else {"programs": 0, "anchors": self.blob.put(
            np.zeros((0, 4), dtype=np.int64))}
        # a provisional trace runs no census (the census only ever scales counts up): the config is
        # traced again in full, census included, if the model picks it
        pids = census_pids(ctx.num_programs, len(sampled), self.rng, self._has_loops) if self.dense else []
        census = run_census(pids, lambda pid: self._census_program(ctx, pid), self._has_loops,
                            traced=sampled if pids else [])
        self.launches.append({"kernel": ctx.kernel, "grid": list(ctx.grid), "num_programs": ctx.num_programs,
                              "tensors": tensors, "programs": programs, "wave": wave, "census": census,
                              "_outputs": checked})

    def _run_captured(self, ctx: LaunchContext, pid: int, dense_trips: int, checked: list[dict[str, Any]]
                      ) -> dict[str, Any]:
        """Run a program densely and add what it stored to *checked* (complete when no loop was sampled)."""
        self._capture = ProgramOutputs(pid)
        try:
            record = self._run_program(ctx, pid, dense_trips)
            checked.append(self._capture.finish(loops_complete(record["execs"]), np.random.default_rng(
                random.Random(f"{CONTROL.seed}:outputs:{len(self.launches)}:{pid}").getrandbits(63))))
        finally:
            self._capture = None
        return record

    def _undo_writes(self) -> None:
        """Put back what the last program run wrote (stores, atomics), newest first: a program run
        again must find the memory its first run found, or a flag it set could steer its second run."""
        for view, index, old in reversed(self._writes or []):
            view[index] = old
        self._writes = None

    def _byte_view(self, tensor) -> np.ndarray:
        view = self._views.get(tensor.start)
        if view is None:
            view = self._views[tensor.start] = np.ctypeslib.as_array(
                (ctypes.c_uint8 * tensor.storage_bytes).from_address(tensor.start))
        return view

    def _run_program(self, ctx: LaunchContext, pid: int, dense_trips: int, keep_writes: bool = False) -> dict[str, Any]:
        """Run one sampled program (*dense_trips* > 0: its loops densely, that many trips per loop;
        *keep_writes*: keep what its writes overwrite, for :meth:`_undo_writes`)."""
        self._writes = [] if keep_writes else None
        # one trip plan per launch: every sampled program samples the same trips, so programs that
        # read the same data leave the same sectors (the judge checks the wave anchors against them)
        CONTROL.reset(f"{len(self.launches)}")
        CONTROL.dense = dense_trips > 0
        CONTROL.dense_trips = dense_trips or DENSE_TRIPS
        self._program = ProgramEvents(pid)
        try:
            ctx.run_program(pid)
        finally:
            record = self._finish_program(self._program)
            record["dense"] = CONTROL.dense
            CONTROL.dense = False
            self._program = None
        return record

    @staticmethod
    def _sparse_view(record: dict[str, Any], tensors: list[dict[str, Any]]):
        """The judge's count of a program's sparse-plan trips, from its raw (uncommitted) arrays."""
        accesses, runs = record["_raw"]
        data = accesses.tobytes() + runs.tobytes()
        view = dict(record, accesses=[0, "int64", list(accesses.shape)],
                    runs=[len(data) - runs.nbytes, "int64", list(runs.shape)])
        return count_program(view, tensors, BlobReader(data), sparse_view=True)

    def _commit(self, record: dict[str, Any]) -> dict[str, Any]:
        accesses, runs = record.pop("_raw")
        record["accesses"], record["runs"] = self.blob.put(accesses), self.blob.put(runs)
        return record

    def _finish_program(self, ev: ProgramEvents) -> dict[str, Any]:
        # a time limit can interrupt record_access between its appends: keep the rows all three hold, so
        # the interruption (not a length mismatch) is what the run reports
        rows = min(len(ev.accesses), len(ev.runs), len(ev.on_plan))
        del ev.accesses[rows:], ev.runs[rows:], ev.on_plan[rows:]
        accesses = np.array(ev.accesses, dtype=np.int64).reshape(-1, 7)
        runs = np.concatenate(ev.runs) if ev.runs else _NO_RUNS
        ops = [[trip, kind, amount] for (trip, kind), amount in ev.ops.items()]
        return {"pid": ev.pid, "max_block": ev.max_block, "_raw": (accesses, runs), "dots": ev.dots, "ops": ops,
                "execs": [[e.loop, e.kind, e.n, e.parent, e.plan, e.sparse] for e in CONTROL.execs],
                "trips": [list(t) for t in CONTROL.trips[1:]],
                "_firsts": first_sectors(accesses, ev.runs, ev.on_plan)}

    def _wave_or_reused(self, ctx: LaunchContext) -> dict[str, Any]:
        """The wave pass, or in a provisional trace the wave of the same launch in an earlier config."""
        key = launch_key(ctx.fn, ctx.grid, ctx.call_args, self._wave_targets) if self.wave_reuse is not None else None
        found = self.wave_reuse.get(key) if self.wave_reuse is not None else None
        if found is not None:
            count, rows = found
        else:
            count, rows = self._wave(ctx)
            if self.wave_reuse is not None:
                self.wave_reuse.put(key, count, rows)
        # a provisional trace skips the sharing check: contested anchors only ever cost a config its
        # sharing credit, so without the check a config looks no slower, and one the model picks is
        # traced again densely, with the check, before anything about it is reported
        contested = self._contested(ctx, rows) if self.dense else []
        return {"programs": count, "anchors": self.blob.put(rows), "contested": contested}

    def _wave(self, ctx: LaunchContext) -> tuple[int, np.ndarray]:
        """Run the wave pass: (programs run, anchor rows ``[pid, tensor, site, sector]``)."""
        self._wave_rows = []
        count = min(ctx.num_programs, self.wave_programs)
        self.tagging = False                     # the wave pass records addresses only
        RECORDER.active = False                  # and no branch arms (it cuts loops short)
        CONTROL.first_trips_only = True
        try:
            for pid in range(count):
                CONTROL.reset(f"wave:{pid}")
                self._wave_pid = pid
                self._wave_seen = set()
                try:
                    ctx.run_program(pid)
                except _ProgramDone:
                    pass
        finally:
            self._wave_seen = None
            self.tagging = True
            RECORDER.active = True
            CONTROL.first_trips_only = False
        return count, np.array(self._wave_rows, dtype=np.int64).reshape(-1, 4)

    def _contested(self, ctx: LaunchContext, rows: np.ndarray) -> list[int]:
        """Tensors whose anchors claim sharing that the programs' own loads deny.

        Wave programs with equal anchors for a tensor are said to read the same data.  For every
        such group, the first member and up to :data:`SHARING_CHECKS` others (seeded) run their
        first trips again, in full, recording every sector they load: a member that loads other
        sectors of the tensor (a probe of a neighbour's row at the one load site of a helper, which
        the anchors took for the program's data) makes the tensor's anchors untrusted."""
        anchors: dict[int, dict[int, list]] = {}
        for pid, tensor, site, sector in rows.tolist():
            anchors.setdefault(tensor, {}).setdefault(pid, []).append((site, sector))
        rng = random.Random(f"{CONTROL.seed}:sharing:{len(self.launches)}")
        runs: dict[int, dict[int, frozenset] | None] = {}
        contested = []
        for tensor, by_pid in sorted(anchors.items()):
            groups: dict[tuple, list[int]] = {}
            for pid, anchor in sorted(by_pid.items()):
                groups.setdefault(tuple(sorted(anchor)), []).append(pid)
            for members in groups.values():
                if len(members) < 2:
                    continue
                others = members[1:] if len(members) <= SHARING_CHECKS + 1 else rng.sample(members[1:], SHARING_CHECKS)
                loads = [self._first_trip_loads(ctx, pid, runs) for pid in [members[0], *others]]
                if any(got is None or got.get(tensor) != loads[0].get(tensor) for got in loads):
                    contested.append(tensor)
                    break
        return contested

    def _first_trip_loads(self, ctx: LaunchContext, pid: int, runs: dict) -> dict[int, frozenset] | None:
        """Per tensor, the sectors program *pid* loads with every loop cut to its first trip (None when
        such a run fails); memoised in *runs*."""
        if pid in runs:
            return runs[pid]
        self.tagging, RECORDER.active, CONTROL.first_trips_only = False, False, True
        self._sharing = {}
        before = self.violation
        try:
            CONTROL.reset(f"sharing:{pid}")
            ctx.run_program(pid)
            runs[pid] = {t: frozenset(v) for t, v in self._sharing.items()}
        except Exception as exc:        # noqa: BLE001 - cut loops can leave later code on odd values
            if isinstance(exc, RuleViolation) or isinstance(exc.__cause__, RuleViolation):
                raise
            self.violation = before
            runs[pid] = None
        finally:
            self._sharing = None
            self.tagging, RECORDER.active, CONTROL.first_trips_only = True, True, False
        return runs[pid]

    def _census_program(self, ctx: LaunchContext, pid: int) -> tuple[list, list, list]:
        """Run one census program with every ``for`` loop cut to its first trip; its loops, trips and
        bytes moved per tensor and trip ``[[tensor, trip, loaded, written], ...]``."""
        self.tagging, RECORDER.active, CONTROL.first_trips_only, self._census = False, False, True, True
        self._census_io = {}
        before = self.violation          # an access a sampled program made out of bounds still counts
        try:
            CONTROL.reset(f"census:{pid}")
            ctx.run_program(pid)
        except Exception as exc:        # noqa: BLE001 - cut loops can leave later code on values a full
            # run would not have (an index past a buffer): what the program planned until then is its census
            if isinstance(exc, RuleViolation) or isinstance(exc.__cause__, RuleViolation):
                raise
            self.violation = before
        finally:
            self.tagging, RECORDER.active, CONTROL.first_trips_only, self._census = True, True, False, False
        return ([[e.loop, e.kind, e.n, e.parent, e.plan, e.sparse] for e in CONTROL.execs],
                [list(t) for t in CONTROL.trips[1:]],
                [[i, trip, io[0], io[1]] for (i, trip), io in sorted(self._census_io.items())])

    def record_access(self, kind, parts, elem_bytes, block_elems, site) -> None:
        if self._census:
            for tensor, addrs in parts:
                io = self._census_io.setdefault((self._tensor_index[tensor.name], CONTROL.current_trip), [0, 0])
                io[0 if kind == "load" else 1] += int(addrs.size) * int(elem_bytes)
            return
        if self._sharing is not None:
            if kind == "load":
                for tensor, addrs in parts:
                    self._sharing.setdefault(self._tensor_index[tensor.name], set()).update(
                        distinct((addrs - tensor.data_ptr) >> 5).tolist())
            return
        if self._wave_seen is not None:
            if kind == "store":
                return
            for tensor, addrs in parts:
                key = (self._tensor_index[tensor.name], site)
                if key in self._wave_targets and key not in self._wave_seen:
                    self._wave_seen.add(key)
                    self._wave_rows.append((self._wave_pid, key[0], site,
                                            (int(addrs.min()) - tensor.data_ptr) // SECTOR_BYTES))
            if self._wave_seen >= self._wave_targets:
                raise _ProgramDone()
            return
        if self._capture is not None:
            self._capture.note(kind, parts, elem_bytes)
        ev = self._program
        ev.max_block = max(ev.max_block, block_elems)
        if kind != "load" and self._writes is not None:   # called before the write: keep what it overwrites
            for tensor, addrs in parts:
                view = self._byte_view(tensor)
                index = ((addrs - tensor.start)[:, None] + np.arange(elem_bytes)).reshape(-1)
                self._writes.append((view, index, view[index].copy()))
        trip = CONTROL.current_trip
        # a dense run's extra trips count fully too (distinct sectors: re-reads between passes that the
        # sparse trips cannot pair up), but anchor nothing: the other programs did not run them
        on_plan = not CONTROL.off_sparse_plan
        for tensor, addrs in parts:
            ev.on_plan.append(on_plan)
            sectors = distinct((addrs - tensor.data_ptr) >> 5)
            runs = coarse_runs(sectors, 0 if on_plan else coarse_shift(ev.off_plan_runs))
            ev.off_plan_runs += 0 if on_plan else int(runs.shape[0])
            ev.accesses.append((KINDS[kind], self._tensor_index[tensor.name], site, trip, int(addrs.size),
                                int(runs.shape[0]), int(sectors.size)))
            ev.runs.append(runs)

    def on_dot(self, a, b, precision, loaded_rank) -> None:
        ev = self._program
        if ev is None:
            return
        *batch, m, k = a.data.shape
        n = b.data.shape[-1]
        count = int(np.prod(batch)) if batch else 1
        loaded_bytes = RANK_BYTES.get(int(loaded_rank), 0)     # operands as read from memory (before casts)
        operand_bytes = (a.data.size * max(1, a.dtype.primitive_bitwidth // 8, loaded_bytes)
                         + b.data.size * max(1, b.dtype.primitive_bitwidth // 8, loaded_bytes))
        ev.dots.append([int(m), int(n), int(k), count, str(a.dtype.scalar), precision, int(loaded_rank),
                        CONTROL.current_trip, int(operand_bytes)])
        ev.max_block = max(ev.max_block, int(m * n * count))

    def on_ops(self, kind, elems, ops_per_elem) -> None:
        ev = self._program
        if ev is None:
            return
        key = (CONTROL.current_trip, OP_KINDS[kind])
        ev.ops[key] = ev.ops.get(key, 0.0) + elems * ops_per_elem
        ev.max_block = max(ev.max_block, int(elems))


def _roles(launches: list[dict[str, Any]], inputs: list[torch.Tensor], outputs: Any) -> None:
    """Label each launch tensor input:i, output:j or scratch, by storage."""
    items = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    starts = {t.untyped_storage().data_ptr(): f"input:{i}" for i, t in enumerate(inputs)}
    for j, out in enumerate(items):
        if isinstance(out, torch.Tensor):
            starts.setdefault(out.untyped_storage().data_ptr(), f"output:{j}")
    for launch in launches:
        for t in launch["tensors"]:
            t["role"] = starts.get(t.pop("start"), "scratch")


#: Empty allocations up to this size are poisoned in the trace (see trace_config).
POISON_MAX_BYTES = 64 << 20


def trace_config(launch, task: Task, shape_index: int, config: dict[str, Any], hints: dict[str, Any], *, seed: int,
                 trace_programs: int, timeout: float | None, candidate_file: str, blob: BlobWriter,
                 dense: bool = True, wave_reuse: WaveReuse | None = None) -> dict[str, Any]:
    """Trace ``launch`` at ``task.target_shapes[shape_index]`` with one kernel config (``dense=False``:
    sampled programs run their sparse loop plans only, for a provisional trace, which takes the waves
    *wave_reuse* holds of launches it repeats)."""
    env = task.target_shapes[shape_index]
    start = time.perf_counter()
    rng = random.Random(f"{seed}:{shape_index}:{config_key(config)}")
    # Small empty allocations are poisoned as in the checks: the allocator hands a config the scratch
    # an earlier config freed, and a marker left there let a kernel trace differently by its place in
    # the job (and so by the configs traced before it).  Large ones come freshly mapped (zeros) and
    # poisoning them would commit gigabytes at the target shapes.
    guard = DispatchGuard(poison_empty=True, poison_max_bytes=POISON_MAX_BYTES)
    try:
        with open(candidate_file, encoding="utf-8") as f:
            has_loops = kernels_have_loops(f.read())
    except OSError:
        has_loops = True
    session = TraceSession(trace_programs, rng, guard=guard, candidate_file=candidate_file, blob=blob,
                           has_loops=has_loops, dense=dense, wave_reuse=wave_reuse)
    CONTROL.sampling, CONTROL.seed = True, f"{seed}:{shape_index}:{config_key(config)}"
    inputs, mappings = trace_inputs(task, env, seed)
    tiled = [m is not None for m in mappings]     # the judge draws these inputs' values again (trace_values.py)
    session.aperiodic = AperiodicInputs.of(inputs, [m.tile if m is not None else None for m in mappings], seed)
    for x in inputs:            # the task's data keeps its precision through any view of another dtype
        if isinstance(x, torch.Tensor) and PRECISION_RANK.get(dtype_name(x.dtype), 0):
            session.memory_ranks[x.untyped_storage().data_ptr()] = PRECISION_RANK[dtype_name(x.dtype)]
    signatures: list[dict[str, Any]] = []
    RECORDER.take()
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with active(session), time_limit(timeout, "tracing"), recording_signatures(guard, signatures), guard:
                outputs = launch(*inputs, **config, **hints)
        resolve_outputs(session.launches, inputs, outputs, blob)
        _roles(session.launches, inputs, outputs)
        for record, signature in zip(session.launches, signatures):
            if signature.get("kernel") == record["kernel"]:
                record["signature"] = signature
        del outputs
    except CandidateTimeout as exc:
        raise TraceFailure(f"{exc}; even with sampled programs and loops the kernel runs too long "
                           "(an endless or data-dependent loop?).") from None
    except LoopLimit as exc:
        raise TraceFailure(str(exc)) from None
    except BaseException as exc:   # noqa: BLE001 - anything the candidate raises fails the trace
        if session.violation is not None:
            raise TraceFailure(str(session.violation)) from None
        if guard.refused is not None:
            raise TraceFailure(f"the candidate's host code ran a torch op: {guard.refused}.") from None
        raise TraceFailure(f"launch raised {describe_exception(exc, candidate_file)}.") from None
    finally:
        CONTROL.sampling = False
        session.ctx = None
        del inputs
        release_all(mappings)
    if session.violation is not None:
        raise TraceFailure(str(session.violation))
    if not session.launches:
        raise TraceFailure("launch ran no Triton kernel.")
    return {"shape_index": shape_index, "shape": dict(env), "config": dict(config), "launches": session.launches,
            "arms": RECORDER.take(), "zero_fills": list(guard.zero_filled_bytes), "tiled_inputs": tiled,
            "seconds": time.perf_counter() - start}
