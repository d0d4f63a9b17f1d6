"""Inside the sandboxed child: run ``launch`` on the judge's check runs and report the raw outputs.

The child has no reference and judges nothing.  For each run the judge planned
(shape, value profile, config, input draw, program order) it draws the inputs,
runs ``launch`` under the dispatch guard (torch may only allocate and view;
``empty*`` outputs come back NaN-poisoned) with every program of every launch
executed in a seeded shuffled order and every access bounds-checked, and reports:
the output bytes (into the data channel), which outputs a kernel stored into,
which share memory with an input, digests of the inputs before and after, and a
second call's outputs when the run asks for a repeat.  A run that raises, times
out or breaks a rule ends the job: later runs would not be judged anyway.
"""

from __future__ import annotations

import ast
import functools
import random
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...task import Task
from ...harness.arms import RECORDER
from ...sandbox import BlobWriter
from ...harness.guard import DispatchGuard
from ...harness.inputs import InputFactory, digest
from ...harness.tiled import placed
from ...harness.loader import CandidateTimeout, LoadedCandidate, describe_exception, time_limit
from ..contract.tickets import ticket_calls
from .trace_hooks import LaunchContext, Session, active
from .loop_hooks import CONTROL
from .loop_limit import LoopLimit


class CheckSession(Session):
    """Runs every program of every launch in a shuffled order; remembers which storages were stored to
    and refuses data races (an element one program stores and another loads or stores without atomics, or
    one updates atomically and another reads or stores plainly,
    in the same launch: right in the interpreter's one-at-a-time order, wrong on a GPU)."""

    def __init__(self, *, guard: DispatchGuard, candidate_file: str, order_seed: int, launch_order: bool = False):
        super().__init__(guard=guard, candidate_file=candidate_file)
        self.launch_order = launch_order
        self.stored: set[int] = set()
        self.launches = 0
        self.kernels: list[tuple[str, dict[str, Any]]] = []
        self.rng = random.Random(order_seed)
        self._pid = 0
        self._accesses: dict[int, dict[str, list[np.ndarray]]] = {}     # per storage: addresses and pids

    def launch(self, ctx: LaunchContext) -> None:
        self.launches += 1
        self.kernels.append((ctx.kernel, {k: v for k, v in ctx.call_args.items() if k in ctx.constexprs}))
        self._accesses = {}
        order = list(range(ctx.num_programs))
        if not self.launch_order:                # a kernel right only in launch order is wrong on a GPU
            self.rng.shuffle(order)
        for arrival, pid in enumerate(order):
            CONTROL.reset(f"check:{self.launches}:{pid}")
            self._pid = pid
            ctx.run_program(pid, arrival)
        race = find_race(self._accesses, ctx)
        if race:
            self.fail(race)

    def record_access(self, kind, parts, elem_bytes, block_elems, site) -> None:
        if kind != "load":
            for tensor, _ in parts:
                self.stored.add(tensor.start)
        for tensor, addrs in parts:
            bucket = self._accesses.setdefault(tensor.start, {"load": [], "store": [], "atomic": [], "load_pid": [],
                                                              "store_pid": [], "atomic_pid": []})
            bucket[kind].append(addrs)
            bucket[kind + "_pid"].append(np.full(addrs.size, self._pid, dtype=np.int64))


def find_race(accesses: dict[int, dict[str, list[np.ndarray]]], ctx: LaunchContext) -> str | None:
    """Why this launch races, or None: two programs touch one element and one of them stores to it,
    or one updates it atomically and another reads or stores it plainly (what an atomic accumulates is
    only complete after the launch: read during it, it tells a program who ran before it).  Atomic
    updates of one element by many programs are fine.  *accesses*: per storage, the addresses loaded,
    stored and updated atomically, and the program of each."""
    for bucket in accesses.values():
        if not bucket["store"] and not bucket.get("atomic"):
            continue                              # a storage nobody writes to cannot race
        loads, load_pids = _flat(bucket, "load")
        plain_stores = _flat(bucket, "store")
        if bucket["store"]:
            stores, store_pids = plain_stores
            order = np.argsort(stores, kind="stable")
            stores, store_pids = stores[order], store_pids[order]
            clash = (stores[1:] == stores[:-1]) & (store_pids[1:] != store_pids[:-1])
            if clash.any():
                k = int(np.argmax(clash))
                return _race_text(ctx, int(stores[k]), [int(store_pids[k]), int(store_pids[k + 1])],
                                  "both store to", " without atomics")
            first = np.concatenate(([True], stores[1:] != stores[:-1]))
            hit = _other_writer(stores[first], store_pids[first], store_pids[first], loads, load_pids)
            if hit is not None:
                return _race_text(ctx, int(loads[hit[0]]), [hit[1], int(load_pids[hit[0]])],
                                  "both store to and load from", " without atomics")
        if bucket.get("atomic"):
            atomics, atomic_pids = _flat(bucket, "atomic")
            order = np.argsort(atomics, kind="stable")
            atomics, atomic_pids = atomics[order], atomic_pids[order]
            starts = np.flatnonzero(np.concatenate(([True], atomics[1:] != atomics[:-1])))
            low, high = np.minimum.reduceat(atomic_pids, starts), np.maximum.reduceat(atomic_pids, starts)
            for kind in ("load", "store"):
                addrs, pids = (loads, load_pids) if kind == "load" else plain_stores
                hit = _other_writer(atomics[starts], low, high, addrs, pids)
                if hit is not None:
                    return _race_text(ctx, int(addrs[hit[0]]), [hit[1], int(pids[hit[0]])],
                                      f"update atomically and {kind} plainly", "")
    return None


def _flat(bucket: dict[str, list[np.ndarray]], kind: str) -> tuple[np.ndarray, np.ndarray]:
    if not bucket.get(kind):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(bucket[kind]), np.concatenate(bucket[kind + "_pid"])


def _other_writer(addrs: np.ndarray, low: np.ndarray, high: np.ndarray, query: np.ndarray,
                  query_pids: np.ndarray) -> tuple[int, int] | None:
    """(index into *query*, the writing program) of the first query address that a program other than
    the querying one wrote; *addrs* sorted and distinct, written by programs *low*..*high* each."""
    if not addrs.size or not query.size:
        return None
    idx = np.clip(np.searchsorted(addrs, query), 0, len(addrs) - 1)
    at = addrs[idx] == query
    other = at & ((low[idx] != query_pids) | (high[idx] != query_pids))
    if not other.any():
        return None
    k = int(np.argmax(other))
    writer = int(low[idx[k]]) if low[idx[k]] != query_pids[k] else int(high[idx[k]])
    return k, writer


def _race_text(ctx: LaunchContext, addr: int, pids: list[int], what: str, how: str) -> str:
    tensor = next((t for t in ctx.tensors.tensors if t.start <= addr < t.end), None)
    where = (f"element {(addr - tensor.data_ptr) // tensor.elem_bytes} of argument {tensor.name}"
             if tensor else f"address {addr:#x}")
    progs = " and ".join(str(ctx.coords(p)) for p in pids)
    return (f"data race in kernel {ctx.kernel}: programs {progs} {what} {where}{how}. On a GPU "
            "programs run concurrently and in no fixed order: give every output element to one program, or "
            "combine partial results with tl.atomic_add (or in a second kernel launch).")


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


@functools.lru_cache(maxsize=8)
def has_tickets(path: Path) -> bool:
    """Does a jit function of the candidate at *path* draw work tickets (:mod:`..contract.tickets`)?"""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return False
    return any(ticket_calls(fn) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef))


class RunFailed(Exception):
    """The run ended without outputs to judge; the message is the reason."""


def _call(cand: LoadedCandidate, inputs: list[torch.Tensor], params: dict[str, Any], *, order_seed: int,
          timeout: float | None, launch_order: bool = False) -> tuple[Any, CheckSession]:
    guard = DispatchGuard(poison_empty=True)
    session = CheckSession(guard=guard, candidate_file=str(cand.path), order_seed=order_seed,
                           launch_order=launch_order)
    CONTROL.sampling = False
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with active(session), time_limit(timeout, "launch"), guard:
                result = cand.launch(*inputs, **params)
    except CandidateTimeout as exc:
        raise RunFailed(f"{exc}; the kernel must finish quickly at these shapes (look for an endless loop).") from None
    except LoopLimit as exc:
        raise RunFailed(str(exc)) from None
    except BaseException as exc:   # noqa: BLE001 - anything the candidate raises is a failed run
        if session.violation is not None:
            raise RunFailed(str(session.violation)) from None
        if guard.refused is not None:
            raise RunFailed(f"the candidate's host code ran a torch op: {guard.refused}; launch may only allocate, "
                            "make views and launch kernels.") from None
        raise RunFailed(f"launch raised {describe_exception(exc, cand.path)}.") from None
    if session.violation is not None:           # raised inside the kernel but swallowed somewhere
        raise RunFailed(str(session.violation))
    if session.launches == 0:
        raise RunFailed("launch ran no Triton kernel; it must compute its outputs in @triton.jit kernels.")
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    for i, item in enumerate(items):
        if not isinstance(item, torch.Tensor):
            raise RunFailed(f"launch returned {type(item).__name__} at position {i}; expected a torch.Tensor.")
        if item.layout != torch.strided or item.device.type != "cpu":
            raise RunFailed(f"output {i} is a {item.layout} tensor on {item.device}; return dense CPU tensors.")
    return items, session


def _put_output(blob: BlobWriter, out: torch.Tensor) -> dict[str, Any]:
    values = out.detach().contiguous()
    raw = values.view(torch.uint16) if values.dtype == torch.bfloat16 else values
    array = raw.numpy() if values.dtype != torch.bool else raw.numpy().astype(np.bool_)
    return {"ref": blob.put(array.reshape(-1)), "dtype": str(values.dtype).replace("torch.", ""),
            "shape": list(values.shape)}


def _plain(value: Any) -> Any:
    """A constexpr value as JSON (numbers, strings, booleans; anything else as its text)."""
    value = getattr(value, "value", value)
    return value if isinstance(value, (bool, int, float, str)) or value is None else str(value)


def run_check(cand: LoadedCandidate, task: Task, run: dict[str, Any], *, seed: int, hints: dict[str, Any],
              blob: BlobWriter, timeout: float | None) -> dict[str, Any]:
    """One planned run: outputs and facts for the judge; raises :class:`RunFailed`."""
    factory = InputFactory(task, seed)
    # every input sits where the trace's do (an aligned mapping of its own): its address tells nothing
    inputs = [placed(t) for t in factory.make(run["shape"], run["profile"], call=run["call"])]
    before = [digest(t) for t in inputs]
    spans = [_storage_span(t) for t in inputs]
    params = {**run["config"], **hints}
    RECORDER.take()                                   # arms taken before this run (probes) do not count
    # launch order once, for kernels with work tickets: the schedule the trace gives them (contract/tickets.py)
    in_order = bool(run.get("launch_order")) and has_tickets(cand.path)
    outputs, session = _call(cand, inputs, params, order_seed=run["order_seed"], timeout=timeout,
                             launch_order=in_order)
    record: dict[str, Any] = {"inputs_before": before, "inputs_after": [digest(t) for t in inputs],
                              "launches": session.launches, "outputs": [],
                              "kernels": [[name, {k: _plain(v) for k, v in flags.items()}]
                                          for name, flags in session.kernels]}
    for out in outputs:
        lo, hi = _storage_span(out)
        shared = next((name for name, (a, b) in zip(task.input_names, spans) if lo < b and a < hi), None)
        entry = _put_output(blob, out)
        entry.update(written=bool(out.numel() == 0 or lo in session.stored), aliases_input=shared,
                     contiguous=bool(out.is_contiguous()))
        record["outputs"].append(entry)
    if run.get("repeat"):
        again = [placed(t) for t in factory.make(run["shape"], run["profile"], call=run["call"])]
        second, _ = _call(cand, again, params, order_seed=run["order_seed"], timeout=timeout,
                          launch_order=in_order)
        first_starts = {_storage_span(t)[0] for t in outputs}
        record["repeat"] = [{**_put_output(blob, out), "same_buffer": _storage_span(out)[0] in first_starts}
                            for out in second]
    record["arms"] = RECORDER.take()
    return record


def run_checks(cand: LoadedCandidate, task: Task, runs: list[dict[str, Any]], *, seed: int, hints: dict[str, Any],
               blob: BlobWriter, timeout: float | None) -> dict[str, Any]:
    """Every planned run in order; stops at the first run that fails outright (a span run too slow for
    its time limit fails like any other: the verifier does not skip what it cannot check)."""
    records: list[dict[str, Any]] = []
    for index, run in enumerate(runs):
        try:
            records.append(run_check(cand, task, run, seed=seed, hints=hints, blob=blob, timeout=timeout))
        except RunFailed as exc:
            return {"runs": records, "failed_run": index, "error": str(exc)}
    return {"runs": records, "failed_run": None, "error": None}


class GridProbe(Session):
    """Runs no program: records how many programs each launch asks for (a dry run of ``launch``)."""

    def __init__(self, *, guard: DispatchGuard, candidate_file: str):
        super().__init__(guard=guard, candidate_file=candidate_file)
        self.programs: list[int] = []

    def launch(self, ctx: LaunchContext) -> None:
        self.programs.append(ctx.num_programs)


def probe_programs(cand: LoadedCandidate, task: Task, env: dict[str, int], params: dict[str, Any],
                   timeout: float | None) -> list[int] | None:
    """Programs of each launch ``launch`` would make at *env* (no kernel runs), or None when the
    dry run fails."""
    from ...harness.inputs import TORCH_DTYPES
    inputs = [placed(torch.zeros(spec.concrete_shape(env), dtype=TORCH_DTYPES[spec.dtype])) for spec in task.inputs]
    guard = DispatchGuard(poison_empty=False)
    session = GridProbe(guard=guard, candidate_file=str(cand.path))
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with active(session), time_limit(timeout, "launch"), guard:
                cand.launch(*inputs, **params)
    except BaseException:   # noqa: BLE001 - a probe that fails tells nothing
        return None
    return session.programs if session.violation is None else None


#: The sizes a grid probe tries for a symbol, smallest first, until the dry run works: a convolution or
#: pooling window needs an input at least its window wide (a 3 x 3 convolution has no output at 1).
PROBE_SIZES = (1, 2, 3, 4, 5, 7, 9, 13, 17)
#: A failed dry run slower than this ends the search for a size that works (the probe stays failed).
PROBE_FAIL_S = 0.25


def probe_grids(cand: LoadedCandidate, task: Task, configs: list[dict[str, Any]], *, hints: dict[str, Any],
                timeout: float | None) -> list[dict[str, Any]]:
    """For each config: programs at the largest check shape, and with each shape symbol set to the
    smallest size in :data:`PROBE_SIZES` (below its check size) at which the dry run works, usually 1
    (``ones``; the size in ``ones_at``).  The judge infers which dimensions programs tile and by how
    much (see span_shape)."""
    from ..contract.span_shape import shape_symbols
    base = max(task.check_shapes, key=task.input_bytes)
    out = []
    for config in configs:
        params = {**config, **hints}
        ones, ones_at = {}, {}
        for d in shape_symbols(task):
            ones[d] = None
            for size in (v for v in PROBE_SIZES if v == 1 or v < int(base[d])):
                start = time.monotonic()
                ones[d] = probe_programs(cand, task, {**base, d: size}, params, timeout)
                if ones[d] is not None and all(p > 0 for p in ones[d]):     # an empty output tells nothing
                    ones_at[d] = size
                    break
                if time.monotonic() - start > PROBE_FAIL_S:
                    break
        out.append({"config": dict(config), "base": dict(base),
                    "programs": probe_programs(cand, task, base, params, timeout), "ones": ones, "ones_at": ones_at})
    return out
