"""Rules for reductions (Reduce.cuh), scans (ScanUtils.cuh) and the composite ``logsumexp``.

Reductions: ATen's ``gpu_reduce_kernel`` (``aten/src/ATen/native/cuda/Reduce.cuh``) reads the input
once and sizes its grid to fill the GPU (``ReduceConfig``: values per thread, vectorised loads on
the contiguous dim, ``ctas_per_output`` splits a long reduction over several blocks and combines
them through a global buffer), so a reduction is bandwidth-bound whatever its shape.
Welford-based ones (``var``, ``std``, ``var_mean``) make the same single pass.

Scans (``cumsum``, ``cumprod``, ``logcumsumexp``, ``cummax``/``cummin``): ``scan_dim`` first makes
the input contiguous (``expect_contiguous``), then
* along the innermost dim: ``tensor_kernel_scan_innermost_dim``, 512-thread blocks of
  ``tx`` x ``512 / tx`` threads, ``tx = 2^clamp((9 + log2 row - log2 rows) / 2, 4, 9)``
  (``get_log_num_threads_x_inner_scan``); each block scans ``512 / tx`` rows in chunks of
  ``2 tx`` elements, one chunk per iteration: a global load round plus an up- and a down-sweep
  of ``log2(2 tx)`` barrier steps each through shared memory;
* along an outer dim: ``tensor_kernel_scan_outer_dim``, one thread per column, coalesced.
"""

from __future__ import annotations

import math

from ..hardware import HardwareSpec
from .kernels import EagerKernel
from .record import AtenCall
from .rules_pointwise import elementwise, strided_eff

#: One barrier step of a shared-memory scan, in units of a load round trip.  Fitted on the
#: H100 set: cumsum / cumprod of [32768, 32768] (L1-89/90, 4.7 ms: 2 waves x 1024 chunks x
#: (1 + 2 x 5 steps x 0.13) round trips).
SCAN_BARRIER_ROUNDS = 0.13

def reduce_eff(spec: HardwareSpec) -> float:
    """Reduction kernels' share of the copy bandwidth (``library_efficiency.reduction``: on the H100,
    sum / mean / max / min / argmax / argmin over dim 1 of [128, 4096, 4095], KernelBench L1-47..53,
    run at 2.7-3.0 TB/s, and the norms of L1-37/38/39 fit 0.9 beside their broadcast divisions)."""
    return spec.library_efficiency["reduction"]


REDUCTIONS = frozenset({
    "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "var", "std", "var_mean",
    "std_mean", "norm", "linalg_vector_norm", "all", "any", "count_nonzero", "nansum", "aminmax", "median",
    "nanmean", "mode", "kthvalue"})
SCANS = frozenset({"cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "_cummax_helper", "_cummin_helper"})


def reduction(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """One reduction kernel: the input read once, the (small) result written."""
    if not call.inputs:
        return elementwise(call, spec)
    x = call.inputs[0]
    writes = sum(t.nbytes for t in call.outputs)
    # max(x, other) / min(x, other) with two tensors are elementwise, not reductions
    if call.name in ("max", "min") and len([t for t in call.inputs if t.numel > 1]) > 1:
        return elementwise(call, spec)
    if x.numel == (call.outputs[0].numel if call.outputs else 0):
        return elementwise(call, spec)
    return [EagerKernel(f"{call.name}: reduction", read_bytes=x.distinct_bytes, write_bytes=writes,
                        mem_eff=reduce_eff(spec))]


def logsumexp(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """``logsumexp`` runs as kernels (ReduceOps.cpp ``logsumexp_out_impl``): ``amax``, a fix-up of
    infinite maxima on the small result, ``self - maxes`` (full size), ``exp_`` in place, ``sum``,
    then ``log_`` and ``add_`` on the small result."""
    x = call.inputs[0]
    small = call.outputs[0].nbytes if call.outputs else 0.0
    n = x.nbytes
    full = [EagerKernel("logsumexp: amax", read_bytes=n, write_bytes=small, mem_eff=reduce_eff(spec)),
            EagerKernel("logsumexp: x - max (broadcast)", read_bytes=n + small, write_bytes=n, mem_eff=strided_eff(spec)),
            EagerKernel("logsumexp: exp_ in place", read_bytes=n, write_bytes=n),
            EagerKernel("logsumexp: sum", read_bytes=n, write_bytes=small, mem_eff=reduce_eff(spec))]
    tail = [EagerKernel(f"logsumexp: {what} on the result", read_bytes=small, write_bytes=small)
            for what in ("abs", "eq inf", "masked_fill_", "log_", "add_")]
    return full + tail


def scan(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """``scan_dim``: a contiguous copy of a strided input, then the inner- or outer-dim scan kernel."""
    x = call.inputs[0]
    dim = call.arg(1, "dim", -1)
    ndim = max(len(x.shape), 1)
    dim = dim % ndim if isinstance(dim, int) else ndim - 1
    out_bytes = sum(t.nbytes for t in call.outputs)
    kernels = []
    if not x.is_contiguous:
        kernels.append(EagerKernel(f"{call.name}: contiguous copy of the input", read_bytes=x.nbytes,
                                   write_bytes=x.nbytes, mem_eff=strided_eff(spec)))
    if dim != ndim - 1 or x.numel <= 1:
        kernels.append(EagerKernel(f"{call.name}: outer-dim scan, a thread per column", read_bytes=x.nbytes,
                                   write_bytes=out_bytes, mem_eff=reduce_eff(spec)))
        return kernels
    row = x.shape[-1]
    rows = max(x.numel // max(row, 1), 1)
    log_tx = min(max((9 + math.ceil(math.log2(max(row, 1))) - math.ceil(math.log2(rows))) // 2, 4), 9)
    tx = 2 ** log_tx
    ty = 512 // tx
    chunks = math.ceil(row / (2 * tx))
    steps = 2 * math.log2(2 * tx)
    kernels.append(EagerKernel(
        f"{call.name}: inner-dim scan, {tx}x{ty}-thread blocks, {chunks} chunks per row",
        read_bytes=x.nbytes, write_bytes=out_bytes, mem_eff=reduce_eff(spec), blocks=math.ceil(rows / ty), threads=512,
        rounds=chunks * (1.0 + steps * SCAN_BARRIER_ROUNDS)))
    return kernels
