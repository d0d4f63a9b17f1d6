"""The vectorized latency model: [hardware x points] in numpy, one point = (launch, num_warps, num_stages).

Per launch (hierarchical roofline per program and per wave; see ``docs/perfmodel.md``):

* compute per core:  n_core programs x (max(matrix, shared-memory operand feed) + vector),
  divided by the share of the core the resident warps can drive, times load imbalance;
* memory:            max(DRAM bytes / BW, L2 bytes / BW (chip, or the core's port),
                     latency chain = rounds x trips / stages x latency);
* overlap:           T = (C^d + M^d)^(1/d), d = resident programs x pipeline stages per core
                     (the sum for one unpipelined program, tending to max(C, M));
* plus a dot kernel's epilogue store (after its K loop, not overlapped) and the launch overhead;
* accesses Triton cannot vectorise (rows not 16-element aligned) move bytes at
  ``UNVECTORIZED_EFF`` of the bandwidth.

Invalid configs get +inf and a reason code (:mod:`.occupancy`).  The result keeps each
bound's time (the breakdown) so the search can be told why a kernel is slow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .features import LaunchFeatures
from .hardware import DTYPE_KEYS, HardwareSpec
from .memory_traffic import traffic
from .occupancy import occupancy

#: Breakdown components that can bound a launch, in report order.
BOUNDS = ("compute-matrix", "shared-memory", "compute-vector", "dram", "l2", "latency", "epilogue", "launch")
#: Bandwidth share left to accesses Triton cannot vectorise (rows not 16-element aligned, see
#: alignment.py): element-wide loads and 4-byte cp.async copies instead of 16-byte ones.
#: Approx: an assumption; no row of the fidelity datasets pins it.
UNVECTORIZED_EFF = 0.7


def _col(values) -> np.ndarray:
    return np.asarray(values, dtype=float)[:, None]


@dataclass
class HardwareArrays:
    """Hardware figures as [H, 1] columns (rates per second, sizes in bytes, times in seconds)."""

    specs: list[HardwareSpec]

    def __post_init__(self):
        s = self.specs
        inf = np.inf
        self.names = [x.name for x in s]
        self.is_npu = np.array([x.is_npu for x in s])[:, None]
        self.cores_dot = _col([x.cores for x in s])
        self.cores_vec = _col([x.vector_cores or x.cores for x in s])
        self.clock = _col([x.clock_ghz * 1e9 for x in s])
        self.cores = self.cores_dot
        vec_flops = np.array([x.vector_tflops["fp32"] * 1e12 for x in s])
        rate = np.array([[x.matrix_tflops.get(d, 0.0) * 1e12 * x.matrix_efficiency for d in DTYPE_KEYS] for x in s])
        self.matrix_rate = np.where(rate > 0, rate, vec_flops[:, None])     # chip FLOP/s per dtype class
        self.vec_lanes = _col(vec_flops / 2.0)                               # element ops per second, chip
        sfu_cores = np.array([x.vector_cores or x.cores for x in s], dtype=float)
        self.sfu = _col([x.transcendental_per_clk * x.clock_ghz * 1e9 for x in s]) * sfu_cores[:, None]
        self.smem_bw = _col([x.smem_bytes_per_clk * x.clock_ghz * 1e9 for x in s])
        self.port_bw = _col([x.core_l2_bytes_per_clk * x.clock_ghz * 1e9 for x in s])
        self.dram_bw = _col([x.dram_tbps * 1e12 * x.dram_efficiency for x in s])
        self.l2_bw = _col([x.l2_tbps * 1e12 for x in s])
        self.l2_cap = _col([x.l2_bytes * x.l2_usable_fraction for x in s])
        self.l1 = _col([x.l1_bytes for x in s])
        self.lat_l2 = _col([x.l2_latency_ns * 1e-9 for x in s])
        self.lat_dram = _col([x.dram_latency_ns * 1e-9 for x in s])
        self.launch = _col([x.launch_overhead_us * 1e-6 for x in s])
        self.warp_size = _col([x.warp_size for x in s])
        self.sched = _col([x.schedulers_per_core for x in s])
        self.smem_core = _col([x.smem_bytes_per_core or inf for x in s])
        self.smem_prog = _col([x.smem_bytes_per_program or inf for x in s])
        self.regs_core = _col([x.registers_per_core or inf for x in s])
        self.max_regs = _col([x.max_registers_per_thread or inf for x in s])
        self.max_threads_core = _col([x.max_threads_per_core or inf for x in s])
        self.max_threads_prog = _col([x.max_threads_per_program or inf for x in s])
        self.max_programs = _col([x.max_programs_per_core for x in s])
        self.auto_buffers = _col([x.auto_buffers for x in s])
        self.stage_offset = _col([x.smem_stage_offset for x in s])
        npu = [x.npu or {} for x in s]
        self.ub = _col([n.get("ub_bytes", inf) for n in npu])
        self.npu_l1 = _col([n.get("l1_bytes", inf) for n in npu])
        self.l0a = _col([n.get("l0a_bytes", inf) for n in npu])
        self.l0b = _col([n.get("l0b_bytes", inf) for n in npu])
        self.l0c = _col([n.get("l0c_bytes", inf) for n in npu])
        self.granules = [tuple(x.matrix_granule) for x in s]


@dataclass
class ModelOutput:
    """[H, N] arrays: latency (+inf when invalid), reason code, bound index, breakdown, details."""

    latency: np.ndarray
    reason: np.ndarray
    bound: np.ndarray
    components: dict[str, np.ndarray]
    details: dict[str, np.ndarray]


def evaluate(feat: LaunchFeatures, rows: np.ndarray, warps: np.ndarray, stages: np.ndarray,
             hw: HardwareArrays, pad: np.ndarray | None = None, compiled=None) -> ModelOutput:
    """Latency of launches ``feat[rows]`` run with (warps, stages) on every hardware in *hw*.

    *pad* is ``feat.padded_flop_factor(hw.granules)`` (computed here when not given).
    *compiled*: the compiler's figures per point (:class:`~.occupancy.CompiledArrays`), or None.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if pad is None:
        pad = feat.padded_flop_factor(hw.granules)

    def f(a):
        return np.asarray(a, dtype=float)[rows][None, :]

    warps = np.asarray(warps, dtype=float)[None, :]
    vec_penalty = 1.0 + f(feat.scalar_share) * (1.0 / UNVECTORIZED_EFF - 1.0)
    stages = np.asarray(stages, dtype=float)[None, :]
    has_dot = (feat.dot_flops_total > 0)[rows][None, :]
    P = f(feat.programs)
    raw_trips = f(feat.loop_trips)
    trips = np.maximum(raw_trips, 1.0)
    # num_stages pipelines the loads that feed dots (their operand tiles, loaded from memory); the
    # loop's other loads keep the backend's automatic buffering: the credit is the fed share of a trip.
    trip_loads = f(feat.load_bytes) / trips
    fed = np.clip(f(feat.dot_operand_bytes) / np.maximum(trip_loads, 1.0), 0.0, 1.0)
    s_eff = np.where(has_dot & (raw_trips > 1),
                     fed * np.maximum(stages, 1.0) + (1.0 - fed) * hw.auto_buffers, hw.auto_buffers)

    occ = occupancy(hw, has_dot=has_dot, warps=warps, stages=stages, dot_operand_bytes=f(feat.dot_operand_bytes),
                    max_block_elems=f(feat.max_block_elems), a_tile_bytes=f(feat.a_tile_bytes),
                    b_tile_bytes=f(feat.b_tile_bytes), c_tile_elems=f(feat.c_tile_elems),
                    vec_buffers=hw.auto_buffers, compiled=compiled)
    pc = np.where(has_dot, hw.cores_dot, hw.cores_vec)
    c_used = np.minimum(pc, P)
    n_core = np.ceil(P / c_used)
    r_eff = np.minimum(occ.resident, n_core)
    W = c_used * r_eff
    share = np.where(hw.is_npu, 1.0, np.minimum(1.0, r_eff * warps / hw.sched))
    imbalance = 1.0 + (f(feat.bytes_spread) - 1.0) / n_core

    # ---- compute per core ----
    flops = feat.dot_flops[rows]                                       # [N, D]
    mat_prog = np.einsum("nd,hnd,hd->hn", flops, pad[:, rows, :], 1.0 / hw.matrix_rate) * hw.cores_dot
    smem_prog = f(feat.dot_flops_total * feat.operand_bytes_per_flop) / hw.smem_bw * vec_penalty
    # Local memory (register spills: stored and reloaded each trip).  The share of the resident
    # programs' local footprint that L1 holds is served there, serially, at the shared-memory rate;
    # the rest goes through L2, and what the concurrent programs' footprint leaves of L2 to DRAM
    # (CUDA C++ Programming Guide, "Local Memory": local memory lives in device memory, cached in L1/L2).
    spill_traffic = occ.spill_bytes_per_trip * trips                   # bytes per program
    local_bytes = occ.spill_bytes_per_trip / 2.0                        # the stored half: the footprint
    l1_room = np.maximum(hw.l1 - occ.resident * occ.smem_bytes, 0.0)
    in_l1 = np.clip(l1_room / np.maximum(r_eff * local_bytes, 1.0), 0.0, 1.0)
    in_l2 = np.clip(hw.l2_cap / np.maximum(W * local_bytes, 1.0), 0.0, 1.0)
    spill_prog = in_l1 * spill_traffic / hw.smem_bw                     # L1 hits, serial with the program's work
    spill_l2 = (1.0 - in_l1) * spill_traffic * P                         # bytes through L2 (all programs)
    spill_dram = spill_l2 * (1.0 - in_l2)
    vec_prog = ((f(feat.elementwise_ops) + f(feat.reduction_elems)) / (hw.vec_lanes / pc)
                + f(feat.transcendental_ops) / (hw.sfu / pc))
    scale = n_core * imbalance / share
    t_mat, t_smem, t_vec = scale * mat_prog, scale * (smem_prog + spill_prog), scale * vec_prog
    t_compute = scale * (np.maximum(mat_prog, smem_prog) + spill_prog + vec_prog)

    # ---- memory ----
    l1_free = np.maximum(hw.l1 - occ.resident * occ.smem_bytes, 0.0)
    tr = traffic(programs=P, concurrent=W, resident=r_eff, load_sector_bytes=f(feat.load_sector_bytes),
                 store_bytes=f(feat.store_bytes), store_sector_bytes=f(feat.store_sector_bytes),
                 unique_load_bytes=f(feat.unique_load_bytes), unique_store_bytes=f(feat.unique_store_bytes),
                 footprint=feat.footprint[rows], footprint_total=f(feat.footprint_total),
                 l1_free=l1_free, l2_capacity=hw.l2_cap, written_floor_bytes=f(feat.written_floor_bytes))
    # A dot kernel stores its output tile after its K loop: that store does not overlap the math
    # (KernelBench L1-7/L1-9, GEMMs with K = 64 / 32: compute + C store at the copy bandwidth).
    serial_write = np.where(has_dot, tr.dram_write, 0.0)
    t_epilogue = serial_write / hw.dram_bw * vec_penalty
    t_dram = (tr.dram_read + tr.dram_write - serial_write) / hw.dram_bw * vec_penalty + spill_dram / hw.dram_bw
    l2_slices = tr.l2_bytes + tr.dram_read + tr.dram_write           # hits, and the fills / write-backs of misses
    t_l2 = np.maximum(l2_slices / hw.l2_bw * vec_penalty + spill_l2 / hw.l2_bw,
                      n_core * imbalance * (tr.l2_bytes_per_program * vec_penalty + spill_l2 / np.maximum(P, 1.0))
                      / hw.port_bw)
    latency_each = hw.lat_l2 + tr.miss_ratio * (hw.lat_dram - hw.lat_l2)
    # the memory latency chain: waves of programs, and never shorter than the longest program's own
    t_lat = np.maximum(np.ceil(n_core / r_eff) * np.maximum(1.0, trips / s_eff),
                       np.maximum(1.0, f(feat.max_loop_trips) / s_eff)) * latency_each
    t_memory = np.maximum(np.maximum(t_dram, t_l2), t_lat)

    # Compute and memory overlap through d independent streams per core: resident programs x
    # pipeline stages, x warps beyond one per scheduler outside dot loops (there a program's
    # warps run unsynchronised between barriers; in a dot loop every stage is a barrier):
    # T = (C^d + M^d)^(1/d), the sum when d = 1, tending to the max.
    warp_streams = np.where(has_dot, 1.0, np.maximum(1.0, warps / hw.sched))
    d = np.maximum(r_eff * s_eff * warp_streams, 1.0)
    hi = np.maximum(t_compute, t_memory)
    lo_ratio = np.minimum(t_compute, t_memory) / np.where(hi > 0, hi, 1.0)
    body = hi * (1.0 + lo_ratio ** d) ** (1.0 / d)
    exposed = body - hi
    body = body + t_epilogue
    launch = hw.launch * np.ones_like(body)
    latency = np.where(occ.reason == 0, body + launch, np.inf)

    components = {"compute-matrix": t_mat, "shared-memory": t_smem, "compute-vector": t_vec,
                  "dram": t_dram, "l2": t_l2, "latency": t_lat, "epilogue": t_epilogue, "launch": launch,
                  "overlap-loss": exposed}
    bound = np.stack([components[b] for b in BOUNDS]).argmax(axis=0)
    details = {"resident": r_eff * 1.0, "resident_max": occ.resident, "limiter": occ.limiter.astype(float), "programs": P * np.ones_like(body),
               "cores_used": c_used * np.ones_like(body), "concurrent": W, "dram_read": tr.dram_read,
               "dram_write": tr.dram_write, "l2_bytes": tr.l2_bytes, "reread_dram": tr.reread_dram,
               "smem_bytes": occ.smem_bytes, "spill_bytes_per_trip": occ.spill_bytes_per_trip,
               "spill_l2_bytes": spill_l2 * np.ones_like(body), "spill_dram_bytes": spill_dram * np.ones_like(body),
               "stages_effective": s_eff * np.ones_like(body), "launches": np.ones_like(body),
               "has_dot": has_dot * np.ones_like(body),
               "coalescing": ((f(feat.load_bytes) + f(feat.store_bytes))
                              / np.maximum(f(feat.load_sector_bytes) + f(feat.store_sector_bytes), 1.0)
                              * np.ones_like(body))}
    return ModelOutput(latency=latency, reason=occ.reason, bound=bound, components=components, details=details)


def sum_launches(out: ModelOutput, starts: np.ndarray) -> ModelOutput:
    """Sum consecutive points into configs (config i = points starts[i]:starts[i+1])."""
    starts = np.asarray(starts, dtype=np.int64)

    def red(a):
        return np.add.reduceat(a, starts, axis=1)

    components = {k: red(v) for k, v in out.components.items()}
    bound = np.stack([components[b] for b in BOUNDS]).argmax(axis=0)
    reason = np.maximum.reduceat(out.reason, starts, axis=1)
    summed = ("dram_read", "dram_write", "l2_bytes", "reread_dram", "launches")
    details = {k: (red(v) if k in summed else np.minimum.reduceat(v, starts, axis=1) if k == "coalescing"
                   else np.maximum.reduceat(v, starts, axis=1)) for k, v in out.details.items()}
    return ModelOutput(latency=red(out.latency), reason=reason, bound=bound, components=components, details=details)
