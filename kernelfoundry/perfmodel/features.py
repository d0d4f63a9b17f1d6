"""Trace records -> per-launch feature arrays (one row per traced kernel launch).

The model never looks at :class:`LaunchTrace` objects in its inner loop: this module
turns a list of launches into a struct of numpy arrays once, including each launch's
wave-footprint curve resampled onto a fixed grid of program counts (1, 2, 4, ... 2^30).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..records import LaunchTrace
from .alignment import scalar_share
from .hardware import DTYPE_KEYS, dtype_class

SECTOR = 32
#: Footprint grid: program counts 2^0 .. 2^(GRID-1).
GRID = 31
GRID_W = 2.0 ** np.arange(GRID)


@dataclass
class LaunchFeatures:
    """Per-launch quantities (per program unless named *_total), each an array over rows."""

    kernel: list[str]
    programs: np.ndarray            # P
    load_bytes: np.ndarray          # useful bytes loaded
    store_bytes: np.ndarray
    load_sector_bytes: np.ndarray   # 32-byte sectors moved by load instructions x 32
    store_sector_bytes: np.ndarray
    unique_load_bytes: np.ndarray   # the program's own distinct footprint
    unique_store_bytes: np.ndarray
    written_floor_bytes: np.ndarray  # sectors the launch's stores must write back, per program (see memory_traffic.py)
    dot_flops: np.ndarray           # [R, D] by dtype class (DTYPE_KEYS)
    dot_shapes: list[list[tuple[int, int, int, str]]]
    operand_bytes_per_flop: np.ndarray  # shared-memory operand traffic per dot flop
    dot_operand_bytes: np.ndarray   # operand tile bytes per inner-loop trip (one pipeline stage)
    a_tile_bytes: np.ndarray        # largest dot A tile (M x K) in bytes
    b_tile_bytes: np.ndarray        # largest dot B tile (K x N) in bytes
    c_tile_elems: np.ndarray        # largest dot accumulator (M x N) in elements
    elementwise_ops: np.ndarray
    transcendental_ops: np.ndarray
    reduction_elems: np.ndarray
    loop_trips: np.ndarray
    max_loop_trips: np.ndarray      # the longest program's loop trips (its serial chain)
    max_block_elems: np.ndarray
    bytes_spread: np.ndarray
    footprint: np.ndarray           # [R, GRID] distinct load bytes of programs 0..w-1 (w = GRID_W), capped at F(P)
    footprint_total: np.ndarray     # F(P): distinct load bytes of the whole launch
    scalar_share: np.ndarray        # share of bytes on tensors Triton cannot vectorise (alignment.py)

    def __len__(self) -> int:
        return len(self.programs)

    @property
    def dot_flops_total(self) -> np.ndarray:
        return self.dot_flops.sum(axis=1)

    @property
    def has_dot(self) -> np.ndarray:
        return self.dot_flops_total > 0

    def padded_flop_factor(self, granules: list[tuple[int, int, int]]) -> np.ndarray:
        """[H, R, D]: padded / useful dot flops per hardware granule (1 where no dot)."""
        out = np.ones((len(granules), len(self), len(DTYPE_KEYS)))
        g = np.array(granules, dtype=float)                               # [H, 3]
        for r, shapes in enumerate(self.dot_shapes):
            if not shapes:
                continue
            mnk = np.array([s[:3] for s in shapes], dtype=float)          # [S, 3]
            cls = np.array([DTYPE_KEYS.index(dtype_class(s[3])) for s in shapes])
            padded = np.ceil(mnk[None] / g[:, None]) * g[:, None]         # [H, S, 3]
            ratio = padded.prod(axis=2) / np.maximum(mnk.prod(axis=1), 1.0)[None]
            for d in np.unique(cls):
                out[:, r, d] = ratio[:, cls == d].mean(axis=1)
        return out


def _elem_bytes(dtype: str) -> int:
    return {"fp16": 2, "bf16": 2, "fp32": 4, "fp8": 1, "int8": 1, "fp64": 8}[dtype_class(dtype)]


def footprint_curve(points: list[list[int]] | None, unique_bytes: float, tensor_bytes: float,
                    programs: int, floor: float = 0.0) -> np.ndarray:
    """One tensor's distinct load bytes of programs 0..w-1 on the grid ``GRID_W``.

    The traced points are scaled so that F(1) equals the program's own footprint
    (``unique_bytes``), interpolated linearly, extrapolated beyond the last point with the
    last segment's slope, capped at the tensor's size and flat beyond the launch's
    program count.  Without points, programs are assumed to share nothing.  *floor*: the largest
    footprint of one sampled program, which the launch reads at least once (when a few programs do
    the work of the whole grid, the mean program's footprint understates it).
    """
    w_eval = np.minimum(GRID_W, float(programs))
    cap = float(tensor_bytes) if tensor_bytes > 0 else math.inf
    pts = sorted((int(w), float(s)) for w, s in (points or []) if int(w) >= 1 and float(s) >= 0)
    floor = min(float(floor), cap)
    if not pts or pts[0][1] <= 0:
        return np.maximum(np.minimum(w_eval * unique_bytes, cap), floor)
    w0, s0 = pts[0]
    scale = unique_bytes * w0 / (s0 * SECTOR) if unique_bytes > 0 else 1.0
    ws = np.array([0.0] + [w for w, _ in pts])
    fs = np.array([0.0] + [s * SECTOR * scale for _, s in pts])
    fs = np.maximum.accumulate(fs)
    slope = (fs[-1] - fs[-2]) / (ws[-1] - ws[-2])
    inside = np.interp(w_eval, ws, fs)
    beyond = fs[-1] + slope * (w_eval - ws[-1])
    return np.maximum(np.minimum(np.where(w_eval <= ws[-1], inside, beyond), cap), floor)


def dot_accumulator_adds(launch: LaunchTrace) -> float:
    """Accumulator element updates of the launch's dots per program (2 flops each per K element).

    ``acc += tl.dot(a, b)`` is traced as a dot plus an fp32 add of the accumulator per K step,
    but Triton folds that add into the MMA's accumulator operand (its combine pass rewrites
    ``add(dot(a, b, 0), c)`` to ``dot(a, b, c)``); the model removes those adds again.
    """
    adds = 0.0
    for dtype, flops in launch.dot_flops.items():
        ks = [k for m, n, k, dt in launch.dot_shapes if dtype_class(dt) == dtype_class(dtype)]
        if ks:
            adds += float(flops) / (2.0 * (sum(ks) / len(ks)))
    return adds


def _launch_row(launch: LaunchTrace, unaligned: frozenset[int] = frozenset()) -> dict:
    t = launch.traffic.values()
    P = max(int(launch.num_programs), 1)
    elementwise = float(launch.elementwise_ops)
    acc_adds = dot_accumulator_adds(launch)
    if acc_adds and elementwise >= acc_adds:      # traced as `acc += tl.dot(...)`: the adds are not real
        elementwise -= acc_adds
    row = {
        "programs": P,
        "load_bytes": sum(x.load_bytes for x in t),
        "store_bytes": sum(x.store_bytes for x in t),
        "load_sector_bytes": sum(max(x.load_sectors * SECTOR, x.load_bytes) for x in t),
        "store_sector_bytes": sum(max(x.store_sectors * SECTOR, x.store_bytes) for x in t),
        "unique_load_bytes": sum(x.unique_load_bytes for x in t),
        "unique_store_bytes": sum(max(x.unique_store_bytes, 0.0) for x in t),
        # a program's written sectors, unless other programs write the rest of them: at most the
        # tensor's own share per program (a sector is written back whole, whatever its mask)
        "written_floor_bytes": sum(min(max(x.unique_store_bytes, 0.0), x.tensor_bytes / P) for x in t
                                   if x.store_bytes > 0),
        "elementwise_ops": elementwise,
        "scalar_share": scalar_share(launch, unaligned),
        "transcendental_ops": float(launch.transcendental_ops),
        "reduction_elems": float(launch.reduction_elems),
        "loop_trips": float(launch.loop_trips),
        "max_loop_trips": max(float(launch.max_loop_trips or 0.0), float(launch.loop_trips)),
        "max_block_elems": float(launch.max_block_elems),
        "bytes_spread": max(float(launch.program_bytes_spread or 1.0), 1.0),
        "dot_operand_bytes": float(launch.dot_operand_bytes),
    }
    flops = np.zeros(len(DTYPE_KEYS))
    for dtype, f in launch.dot_flops.items():
        flops[DTYPE_KEYS.index(dtype_class(dtype))] += float(f)
    row["dot_flops"] = flops
    shapes = [(int(m), int(n), int(k), str(dt)) for m, n, k, dt in launch.dot_shapes]
    row["dot_shapes"] = shapes
    if shapes:
        per_flop = [(m * k + k * n) * _elem_bytes(dt) / (2.0 * m * n * k) for m, n, k, dt in shapes]
        row["operand_bytes_per_flop"] = sum(per_flop) / len(per_flop)
        row["a_tile_bytes"] = max(m * k * _elem_bytes(dt) for m, n, k, dt in shapes)
        row["b_tile_bytes"] = max(k * n * _elem_bytes(dt) for m, n, k, dt in shapes)
        row["c_tile_elems"] = max(m * n for m, n, k, dt in shapes)
    else:
        row.update(operand_bytes_per_flop=0.0, a_tile_bytes=0, b_tile_bytes=0, c_tile_elems=0)
    curve = np.zeros(GRID)
    for name, x in launch.traffic.items():
        if x.unique_load_bytes > 0:
            curve += footprint_curve(launch.footprint.get(name), x.unique_load_bytes, x.tensor_bytes, P,
                                     floor=x.max_unique_load_bytes)
    row["footprint"] = curve
    row["footprint_total"] = float(curve[min(GRID - 1, math.ceil(math.log2(P)))])
    return row


def launch_features(launches: list[LaunchTrace], unaligned: frozenset[int] = frozenset()) -> LaunchFeatures:
    """Feature arrays for *launches* (row i = launches[i]).

    *unaligned* holds the storage sizes of tensors whose rows Triton cannot vectorise
    (:func:`.alignment.unaligned_bytes`).
    """
    rows = [_launch_row(l, unaligned) for l in launches]
    if not rows:
        raise ValueError("launch_features needs at least one launch")

    def col(name, dtype=float):
        return np.array([r[name] for r in rows], dtype=dtype)

    return LaunchFeatures(
        kernel=[l.kernel for l in launches],
        programs=col("programs"), load_bytes=col("load_bytes"), store_bytes=col("store_bytes"),
        load_sector_bytes=col("load_sector_bytes"), store_sector_bytes=col("store_sector_bytes"),
        unique_load_bytes=col("unique_load_bytes"), unique_store_bytes=col("unique_store_bytes"),
        written_floor_bytes=col("written_floor_bytes"),
        dot_flops=np.stack([r["dot_flops"] for r in rows]), dot_shapes=[r["dot_shapes"] for r in rows],
        operand_bytes_per_flop=col("operand_bytes_per_flop"), dot_operand_bytes=col("dot_operand_bytes"),
        a_tile_bytes=col("a_tile_bytes"), b_tile_bytes=col("b_tile_bytes"), c_tile_elems=col("c_tile_elems"),
        elementwise_ops=col("elementwise_ops"), transcendental_ops=col("transcendental_ops"),
        reduction_elems=col("reduction_elems"), loop_trips=col("loop_trips"),
        max_loop_trips=col("max_loop_trips"),
        max_block_elems=col("max_block_elems"), bytes_spread=col("bytes_spread"),
        footprint=np.stack([r["footprint"] for r in rows]), footprint_total=col("footprint_total"),
        scalar_share=col("scalar_share"))
