"""Per-program counters of the trace and their reduction to a :class:`LaunchTrace`.

Every event is scaled by the loop-sampling weight in force when it happens
(:func:`trace_loops.current_weight`).  The unique footprint of a program counts,
for each access, the 32-byte sectors not touched before by that program, times the
weight: a trip that reads new data stands for the unsampled trips that would also
have read new data, and a trip that re-reads adds nothing.  Programs are combined
with :func:`program_weights` (first and last stand for themselves, the random
samples for the rest of the grid).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from .records import LaunchTrace, TensorTraffic
from .trace_hooks import SECTOR_BYTES, LaunchContext, TensorInfo
from .trace_loops import current_trip, current_weight

_LOAD_BYTES, _STORE_BYTES, _LOAD_SECTORS, _STORE_SECTORS, _UNIQUE_LOAD, _UNIQUE_STORE = range(6)
_SECTOR_SHIFT = int(math.log2(SECTOR_BYTES))


class ProgramCounts:
    """What one program did, weighted by loop sampling."""

    def __init__(self, tensors: list[TensorInfo]):
        self.traffic = {t.name: np.zeros(6) for t in tensors}
        self.seen: dict[tuple[str, bool], set[int]] = defaultdict(set)
        self.dot_flops: dict[str, float] = defaultdict(float)
        self.dot_shapes: set[tuple[int, int, int, str]] = set()
        self.dot_trip_bytes: dict[int, float] = defaultdict(float)
        self.ops = {"elementwise": 0.0, "transcendental": 0.0, "reduction": 0.0}
        self.max_block = 0
        self.loop_trips = 0.0

    def access(self, kind: str, tensor: TensorInfo, addrs: np.ndarray, elem_bytes: int) -> None:
        weight = current_weight()
        sectors = np.unique((addrs - tensor.data_ptr) >> _SECTOR_SHIFT)
        row = self.traffic[tensor.name]
        for is_store in ((False, True) if kind == "atomic" else (kind == "store",)):
            seen = self.seen[(tensor.name, is_store)]
            before = len(seen)
            seen.update(sectors.tolist())
            new = len(seen) - before
            row[_STORE_BYTES if is_store else _LOAD_BYTES] += addrs.size * elem_bytes * weight
            row[_STORE_SECTORS if is_store else _LOAD_SECTORS] += sectors.size * weight
            row[_UNIQUE_STORE if is_store else _UNIQUE_LOAD] += new * SECTOR_BYTES * weight

    def dot(self, a: Any, b: Any) -> None:
        weight = current_weight()
        *batch, m, k = a.data.shape
        n = b.data.shape[-1]
        count = math.prod(batch) if batch else 1
        dtype = str(a.dtype.scalar)
        self.dot_flops[dtype] += 2.0 * m * n * k * count * weight
        self.dot_shapes.add((int(m), int(n), int(k), dtype))
        operand_bytes = (a.data.size * max(1, a.dtype.primitive_bitwidth // 8)
                         + b.data.size * max(1, b.dtype.primitive_bitwidth // 8))
        self.dot_trip_bytes[current_trip()] += operand_bytes
        self.max_block = max(self.max_block, int(m * n * count))

    def op(self, kind: str, elems: int, ops_per_elem: int) -> None:
        self.ops[kind] += elems * ops_per_elem * current_weight()
        self.max_block = max(self.max_block, int(elems))

    @property
    def total_bytes(self) -> float:
        return float(sum(row[_LOAD_BYTES] + row[_STORE_BYTES] for row in self.traffic.values()))

    def loaded(self) -> set[str]:
        return {name for name, row in self.traffic.items() if row[_LOAD_BYTES] > 0}


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


def build_launch_trace(ctx: LaunchContext, sampled: list[int], counts: list[ProgramCounts],
                       footprint: dict[str, list[list[int]]]) -> LaunchTrace:
    """Combine the sampled programs' counts into one per-program :class:`LaunchTrace`."""
    weights = program_weights(sampled, ctx.num_programs) if sampled else []

    def mean(value) -> float:
        return float(sum(w * value(c) for w, c in zip(weights, counts)))

    traffic = {}
    for t in ctx.tensors.tensors:
        rows = [c.traffic[t.name] for c in counts]
        total = sum((w * r for w, r in zip(weights, rows)), np.zeros(6))
        traffic[t.name] = TensorTraffic(
            dtype=t.dtype, elem_bytes=t.elem_bytes, tensor_bytes=t.storage_bytes,
            load_bytes=float(total[_LOAD_BYTES]), store_bytes=float(total[_STORE_BYTES]),
            load_sectors=float(total[_LOAD_SECTORS]), store_sectors=float(total[_STORE_SECTORS]),
            unique_load_bytes=float(total[_UNIQUE_LOAD]), unique_store_bytes=float(total[_UNIQUE_STORE]))
    dtypes = sorted({d for c in counts for d in c.dot_flops})
    per_program_bytes = [c.total_bytes for c in counts]
    mean_bytes = sum(per_program_bytes) / len(per_program_bytes) if per_program_bytes else 0.0
    return LaunchTrace(
        kernel=ctx.kernel, grid=ctx.grid, num_programs=ctx.num_programs, sampled_programs=list(sampled),
        traffic=traffic,
        dot_flops={d: mean(lambda c, d=d: c.dot_flops.get(d, 0.0)) for d in dtypes},
        dot_shapes=sorted({s for c in counts for s in c.dot_shapes}),
        dot_operand_bytes=mean(lambda c: max(c.dot_trip_bytes.values(), default=0.0)),
        elementwise_ops=mean(lambda c: c.ops["elementwise"]),
        transcendental_ops=mean(lambda c: c.ops["transcendental"]),
        reduction_elems=mean(lambda c: c.ops["reduction"]),
        loop_trips=mean(lambda c: c.loop_trips),
        max_block_elems=max((c.max_block for c in counts), default=0),
        program_bytes_spread=max(per_program_bytes) / mean_bytes if mean_bytes > 0 else 1.0,
        footprint=footprint)
