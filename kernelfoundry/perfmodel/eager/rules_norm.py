"""Rules for softmax, the normalisations and the losses.

Softmax / log-softmax (``aten/src/ATen/native/cuda/SoftMax.cu``, ``host_softmax``), over the last
dim: rows of at most 2048 elements and 8 KB go to the warp-per-row persistent kernel
(``dispatch_softmax_forward``); longer rows get a 1024-thread block per row, which keeps the row
in registers when ``ceil(dim / 1024) < 10`` (``cunn_SoftMaxForwardReg``), else in shared memory
when it fits the default 48 KB per block and is 16-byte aligned (``cunn_SoftMaxForwardSmem``),
and otherwise reads the row three times (max, sum of exp, write: ``cunn_SoftMaxForward``).  The
second and third reads hit L2 while the rows being processed at once fit in it.  Over an
outer dim: ``cunn_SpatialSoftMaxForward``, the same three passes.

LayerNorm (``layer_norm_kernel.cu``): one block of 256 threads per row (``vectorized_layer_norm_kernel``
when the row is a multiple of 16 bytes, else a moments kernel and a normalise kernel); it reads
the row twice (statistics, then normalise with gamma and beta) and writes it once.  With few
rows the row loops are latency-bound: one 16-byte load per thread per round.

GroupNorm (``group_norm_kernel.cu``): a Welford moments kernel with one block per (sample,
group), a small parameter kernel, then a TensorIterator ``x * a + b`` with per-channel a, b.

BatchNorm in training (cuDNN's spatial batch norm when the input has < 2^31 elements, else
``batch_norm_collect_statistics_kernel``): per-channel statistics with one block per channel,
then a transform kernel; evaluation mode runs the transform only.  InstanceNorm is BatchNorm
over a [1, N*C, ...] view (``Normalization.cpp``).

Losses with a reduction (``mse_loss``, ``smooth_l1_loss``, ``huber_loss``, ``l1_loss``, BCE, ...):
ATen computes the unreduced loss into a temporary and reduces it (``apply_loss_reduction``,
``Loss.cpp``).  ``nll_loss`` (2-D input) is one block gathering one value per row.
"""

from __future__ import annotations

import math

from ..hardware import HardwareSpec
from .kernels import EagerKernel, resident_blocks
from .record import AtenCall
from .rules_pointwise import elementwise, strided_eff
from .rules_reduce import reduce_eff

#: cudaDeviceProp::sharedMemPerBlock (the default, non-opt-in limit): 48 KB on every NVIDIA GPU
#: since Kepler (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability").
SMEM_PER_BLOCK_DEFAULT = 49152
#: Rounds of a register-cached softmax block: load, two block-wide reductions, store (approx).
SOFTMAX_REG_ROUNDS = 4.0
#: Welford statistics passes (batch / instance / group norm) relative to plain reductions.
#: Fitted on the H100 set: InstanceNorm and GroupNorm of [112, 64, 512, 512] (L1-34, L1-35)
#: leave ~4 ms for a 7.5 GB statistics pass next to their transform passes.
WELFORD_EFF = 0.6
#: Bytes one thread of a per-channel statistics block keeps in flight (approx: two 16-byte
#: vector loads; fitted on L1-33, BatchNorm of [64, 64, 512, 512]: 64 channel blocks on 132 SMs).
BN_STATS_BYTES_PER_THREAD = 32.0
#: LayerNorm: 256 threads per row (kCUDANumThreads), one 16-byte vector load each per round.
LN_THREADS, LN_BYTES_PER_THREAD = 256, 16.0

LOSSES = frozenset({"mse_loss", "smooth_l1_loss", "huber_loss", "l1_loss", "soft_margin_loss",
                    "binary_cross_entropy", "binary_cross_entropy_with_logits", "multilabel_margin_loss"})


def _dim(call: AtenCall, i: int = 1) -> int:
    x = call.inputs[0]
    d = call.arg(i, "dim", -1)
    return d % max(len(x.shape), 1) if isinstance(d, int) else len(x.shape) - 1


def _l2_usable(spec: HardwareSpec) -> float:
    return spec.l2_bytes * spec.l2_usable_fraction


def _reread_hit(spec: HardwareSpec, rows: int, threads: int, row_bytes: float) -> float:
    """1 when the rows being processed at once fit in L2, else 0: blocks sweep their rows in step, so
    with LRU replacement a working set larger than the cache evicts each row before its re-read
    (the A100 PCIe log-softmax of 128 KB rows, 216 at once, re-reads from DRAM: liger_a100_eager)."""
    concurrent = min(rows, (spec.vector_cores or spec.cores) * resident_blocks(spec, threads))
    return 1.0 if concurrent * row_bytes <= _l2_usable(spec) else 0.0


def softmax(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """``_softmax`` / ``_log_softmax`` / ``_safe_softmax``: the path ``host_softmax`` picks."""
    x = call.inputs[0]
    out = sum(t.nbytes for t in call.outputs)
    dim = _dim(call)
    size = x.shape[dim] if x.shape else 1
    inner = math.prod(x.shape[dim + 1:]) if x.shape else 1
    rows = max(x.numel // max(size * inner, 1), 1) * inner
    e = x.elem_bytes
    row_bytes = size * e
    if inner == 1 and size <= 2048 and row_bytes <= 8192:
        return [EagerKernel(f"{call.name}: warp per row (persistent)", read_bytes=x.nbytes, write_bytes=out)]
    threads = 1024
    ilp = max(16 // e, 1)
    if inner == 1 and math.ceil(size / threads) < 10:
        return [EagerKernel(f"{call.name}: block per row, row in registers", read_bytes=x.nbytes, write_bytes=out,
                            blocks=rows, threads=threads, rounds=SOFTMAX_REG_ROUNDS)]
    if inner == 1 and row_bytes < SMEM_PER_BLOCK_DEFAULT and size % ilp == 0:
        return [EagerKernel(f"{call.name}: block per row, row in shared memory", read_bytes=x.nbytes,
                            write_bytes=out, blocks=rows, threads=threads,
                            rounds=math.ceil(size / (threads * ilp)) + SOFTMAX_REG_ROUNDS - 1)]
    hit = _reread_hit(spec, rows, threads, row_bytes)
    reads = x.nbytes * (1.0 + 2.0 * (1.0 - hit))
    how = "spatial (outer dim)" if inner > 1 else "block per row"
    return [EagerKernel(f"{call.name}: {how}, 3 reads ({hit:.0%} of the re-reads from L2)", read_bytes=reads,
                        write_bytes=out, blocks=rows if inner == 1 else 0, threads=threads,
                        rounds=3 * math.ceil(size / (threads * ilp)))]


def layer_norm(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """``native_layer_norm``: a block per row, 2 reads + 1 write, gamma/beta re-read per row."""
    x = call.inputs[0]
    normalized = call.arg(1, "normalized_shape", [x.shape[-1]]) or [x.shape[-1]]
    n = math.prod(normalized)
    rows = max(x.numel // max(n, 1), 1)
    params = [t for t in call.inputs[1:] if t.numel == n]
    param_bytes = sum(t.nbytes for t in params)
    hit = _reread_hit(spec, rows, LN_THREADS, n * x.elem_bytes)
    param_hit = 1.0 if param_bytes <= _l2_usable(spec) else 0.0
    reads = x.nbytes * (2.0 - hit) + param_bytes * (1.0 + (rows - 1) * (1.0 - param_hit))
    writes = sum(t.nbytes for t in call.outputs)
    per_round = LN_THREADS * LN_BYTES_PER_THREAD
    return [EagerKernel("native_layer_norm: block per row, statistics then normalise", read_bytes=reads,
                        write_bytes=writes, mem_eff=reduce_eff(spec), blocks=rows, threads=LN_THREADS,
                        rounds=2 * math.ceil(n * x.elem_bytes / per_round))]


def group_norm(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """``native_group_norm``: Welford moments per (sample, group), then ``x * a + b``."""
    x = call.inputs[0]
    small = sum(t.nbytes for t in call.outputs[1:])
    return [EagerKernel("native_group_norm: moments per (sample, group)", read_bytes=x.nbytes, write_bytes=small,
                        mem_eff=WELFORD_EFF * reduce_eff(spec)),
            EagerKernel("native_group_norm: fused parameters", read_bytes=small, write_bytes=small),
            EagerKernel("native_group_norm: x * a + b (per-channel a, b)", read_bytes=x.nbytes,
                        write_bytes=call.outputs[0].nbytes, mem_eff=strided_eff(spec))]


def batch_norm(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """Batch norm: per-channel statistics (training) and the transform."""
    x = call.inputs[0]
    y = call.outputs[0].nbytes if call.outputs else x.nbytes
    training = call.name != "_native_batch_norm_legit_no_training" and bool(call.arg(5, "training", True))
    channels = x.shape[1] if len(x.shape) > 1 else 1
    spatial = math.prod(x.shape[2:]) if len(x.shape) > 2 else 1
    kernels = []
    if training:
        # a channel's elements come in runs of `spatial`; runs shorter than a 32-byte sector waste the rest
        sector_waste = max(1.0, 32.0 / max(spatial * x.elem_bytes, 1.0))
        per_block = x.nbytes / max(channels, 1)
        kernels.append(EagerKernel(
            "batch_norm: per-channel statistics, a block per channel", read_bytes=x.nbytes * min(sector_waste, 8.0),
            write_bytes=8.0 * channels, mem_eff=WELFORD_EFF * reduce_eff(spec), blocks=channels, threads=512,
            rounds=per_block / (512 * BN_STATS_BYTES_PER_THREAD)))
        kernels.append(EagerKernel("batch_norm: running statistics update", read_bytes=16.0 * channels,
                                   write_bytes=8.0 * channels))
    kernels.append(EagerKernel("batch_norm: transform", read_bytes=x.nbytes, write_bytes=y, mem_eff=strided_eff(spec)))
    return kernels


def loss(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """A pointwise loss: the unreduced loss into a temporary, then a reduction of it (unless none)."""
    reduction = call.arg(2, "reduction", 1)
    ins = [t for t in call.inputs if t.numel > 1]
    n = max(t.numel for t in ins) if ins else 1
    temp = n * (ins[0].elem_bytes if ins else 4)
    if reduction == 0:
        return elementwise(call, spec)
    reads = sum(t.distinct_bytes for t in ins)
    return [EagerKernel(f"{call.name}: unreduced loss", read_bytes=reads, write_bytes=temp),
            EagerKernel(f"{call.name}: reduction", read_bytes=temp, write_bytes=4.0, mem_eff=reduce_eff(spec))]


def nll_loss(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """``nll_loss_forward``: one block of ``clamp(2^round(log2(N/16)), 32, 1024)`` threads gathers
    one value per row (``nll_loss_threads``, Loss.cu); each gather waits on its target load."""
    target = call.inputs[1] if len(call.inputs) > 1 else call.inputs[0]
    rows = max(target.numel, 1)
    threads = min(max(2 ** round(math.log2(max(rows / 16, 1))), 32), 1024)
    if call.arg(3, "reduction", 1) == 0 or len(call.inputs[0].shape) != 2:
        return [EagerKernel("nll_loss: gather per row", read_bytes=rows * (32.0 + target.elem_bytes),
                            write_bytes=sum(t.nbytes for t in call.outputs), mem_eff=strided_eff(spec))]
    return [EagerKernel(f"nll_loss: one block of {threads} threads", read_bytes=rows * (32.0 + target.elem_bytes),
                        write_bytes=8.0, blocks=1, threads=threads, rounds=2 * math.ceil(rows / threads))]
