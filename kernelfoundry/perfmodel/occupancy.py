"""Capacity checks and resident programs per core, vectorized over [hardware, points].

GPUs: shared memory per program = num_stages x the dot operand tiles of one loop trip
(less ``smem_stage_offset`` stages that the backend prefetches into registers, as AMD's);
registers per thread from the largest block tensor spread over the program's threads;
resident programs = the tightest of shared memory, registers, threads and the block
limit.  NPUs (Ascend): one program per core at a time; dot tiles must fit L0A / L0B /
L0C, the pipelined operand stages L1, and live vector blocks the Unified Buffer.
A config that does not fit is invalid (+inf latency) with a reason code.  Where the
compile gate compiled a config, the compiler's registers, shared memory and spills
replace the estimates (:class:`CompiledArrays`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Reason codes; 0 = valid.
REASONS = ("ok", "shared memory over capacity", "threads per program over the limit",
           "UB over capacity", "L1 over capacity", "L0A over capacity", "L0B over capacity",
           "L0C over capacity")
OK, SMEM, THREADS, UB, L1, L0A, L0B, L0C = range(len(REASONS))

#: Registers a thread needs before its share of block tensors (addresses, indices, loop state).
BASE_REGS, BASE_REGS_DOT = 32, 64
#: Live copies of the largest block per thread: dot kernels keep the accumulator
#: (operands go through shared memory); other kernels an input and a result.
LIVE_BLOCKS, LIVE_BLOCKS_DOT = 2.0, 1.0
ACC_BYTES = 4       # fp32 accumulators / block registers


@dataclass
class CompiledArrays:
    """The compiler's figures per [hardware, point]; NaN where the point's config was not compiled."""

    registers: np.ndarray        # 32-bit registers per thread (AMD: VGPRs per lane)
    shared_bytes: np.ndarray     # shared memory / LDS per program, every pipeline stage included
    spill_bytes: np.ndarray      # local-memory bytes stored + reloaded per thread (ptxas), per loop trip


@dataclass
class Occupancy:
    """Per [H, N]: resident programs, threads, registers, smem and spills; the reason code."""

    resident: np.ndarray
    threads: np.ndarray
    smem_bytes: np.ndarray
    spill_bytes_per_trip: np.ndarray
    reason: np.ndarray
    limiter: np.ndarray         # which limit set ``resident``: 0 block cap, 1 smem, 2 threads, 3 registers


def occupancy(hw, *, has_dot, warps, stages, dot_operand_bytes, max_block_elems,
              a_tile_bytes, b_tile_bytes, c_tile_elems, vec_buffers, compiled=None) -> Occupancy:
    """Resident programs per core and validity; *hw* is a :class:`~.model.HardwareArrays`.

    *compiled*: a :class:`CompiledArrays` ([H, N], NaN where no compiled config exists): the
    compiler's registers per thread, shared memory per program and spill bytes per thread replace
    the estimates below wherever they are known.
    """
    shape = np.broadcast_shapes(hw.cores.shape, np.shape(warps))
    reason = np.zeros(shape, dtype=np.int8)
    stages = np.maximum(stages, 1)

    # ---- GPU rules ----
    threads = warps * hw.warp_size
    smem_stages = np.maximum(stages - hw.stage_offset, 1.0)
    smem = np.where(has_dot, smem_stages * dot_operand_bytes, 0.0) * np.ones(shape)
    live = np.where(has_dot, LIVE_BLOCKS_DOT, LIVE_BLOCKS)
    need = np.where(has_dot, BASE_REGS_DOT, BASE_REGS) + live * max_block_elems / np.maximum(threads, 1)
    cap = np.minimum(hw.max_regs, np.floor(hw.regs_core / np.maximum(threads, 1) / 8.0) * 8.0)
    regs = np.minimum(np.ceil(need / 8.0) * 8.0, cap)
    spill_regs = np.maximum(need - cap, 0.0)
    spill_bytes = spill_regs * 4.0 * threads * 2.0                    # store + reload per trip
    if compiled is not None:
        known = np.isfinite(compiled.registers)
        regs = np.where(known, np.minimum(np.ceil(np.nan_to_num(compiled.registers) / 8.0) * 8.0, hw.max_regs), regs)
        spill_bytes = np.where(known, np.nan_to_num(compiled.spill_bytes) * threads, spill_bytes)
        smem = np.where(np.isfinite(compiled.shared_bytes), np.nan_to_num(compiled.shared_bytes), smem)
    r_block = hw.max_programs * np.ones(shape)
    r_smem = np.where(smem > 0, np.floor(hw.smem_core / np.maximum(smem, 1.0)), np.inf)
    r_thr = np.floor(hw.max_threads_core / np.maximum(threads, 1))
    r_reg = np.floor(hw.regs_core / np.maximum(regs * threads, 1.0))
    limits = np.stack([r_block, r_smem, r_thr, r_reg])
    gpu_res = limits.min(axis=0)
    gpu_lim = limits.argmin(axis=0)
    gpu = ~hw.is_npu
    reason = np.where(gpu & (smem > hw.smem_prog), SMEM, reason)
    reason = np.where(gpu & (reason == OK) & (threads > hw.max_threads_prog), THREADS, reason)

    # ---- NPU rules ----
    npu = hw.is_npu & (reason == OK)
    ub_need = max_block_elems * ACC_BYTES * np.where(has_dot, 1.0, 2.0 * vec_buffers)
    for code, bad in ((L0A, has_dot & (a_tile_bytes > hw.l0a)),
                      (L0B, has_dot & (b_tile_bytes > hw.l0b)),
                      (L0C, has_dot & (c_tile_elems * ACC_BYTES > hw.l0c)),
                      (L1, has_dot & (stages * dot_operand_bytes > hw.npu_l1)),
                      (UB, ub_need > hw.ub)):
        reason = np.where(npu & (reason == OK) & bad, code, reason)

    resident = np.where(hw.is_npu, 1.0, np.maximum(gpu_res, 1.0))
    spill = np.where(hw.is_npu, 0.0, spill_bytes)
    return Occupancy(resident=resident, threads=np.where(hw.is_npu, 1.0, threads) * np.ones(shape),
                     smem_bytes=np.where(hw.is_npu, 0.0, smem), spill_bytes_per_trip=spill,
                     reason=reason, limiter=np.where(hw.is_npu, 0, gpu_lim))
