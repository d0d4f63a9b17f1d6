"""Rules for GEMMs (cuBLAS / cuBLASLt) and fused attention.

GEMM: ATen calls cuBLAS for ``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``addmv``, ``mv`` (``Blas.cpp``).
fp32 GEMMs run in full fp32 on the CUDA cores unless TF32 is enabled
(``torch.backends.cuda.matmul.allow_tf32`` defaults to False); fp16/bf16 on the tensor cores.
The modelled cuBLAS kernel reaches ``library_efficiency.gemm`` of the peak on full waves of
output tiles (128 x 128, smaller for small outputs); a grid of fewer tiles than cores is split
along K (cuBLAS split-K) when K is long enough.  Leading dimensions that are not multiples of 16 bytes rule out the
vectorised kernels (NVIDIA, "Matrix Multiplication Background User's Guide", DU-09799:
alignment of 16 bytes): ``UNALIGNED_GEMM_EFF``.  The epilogue stores C after the K loop.

Attention: ``scaled_dot_product_attention`` on CUDA picks a fused kernel
(``sdp_utils.cpp``): FlashAttention-2 for fp16/bf16 with head dims up to 256, else the
memory-efficient (CUTLASS) kernel, whose blocks take 32 queries x 128 keys for head dims
above 128 and then accumulate the output in fp32 global memory once per key block (xFormers
``kernel_forward.h``: ``kSingleValueIteration`` is false when the value dim exceeds 128).
"""

from __future__ import annotations

import math

from ..hardware import HardwareSpec, dtype_class
from .kernels import EagerKernel
from .record import AtenCall, TensorMeta

#: GEMMs whose leading dimensions are not 16-byte multiples (approx: KernelBench L1-8, an
#: [8205, 2949] x [2949, 5921] fp32 GEMM, runs at 0.86 of the aligned GEMMs' rate on the H100).
UNALIGNED_GEMM_EFF = 0.86
#: cuBLAS output tiles, largest first: the common 128 x 128 CTA tile of its SIMT and tensor-core
#: kernels, and the smaller ones its heuristic takes when a grid of large tiles would leave
#: SMs idle (approx: cuBLAS's choice is not published).
TILES = (128, 64, 32)
#: Smallest K chunk per split of a split-K GEMM.
SPLIT_K_MIN = 256
#: Keys per block of the memory-efficient attention kernel for head dims above 128.
MEM_EFF_KEYS_PER_BLOCK = 128

GEMMS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addmv", "mv", "dot", "addbmm", "vdot", "matmul",
                   "_addmm_activation", "addr", "outer"})


def _float(call: AtenCall) -> TensorMeta | None:
    return next((t for t in call.inputs if t.dtype.startswith(("float", "bfloat"))), None)


def _mnk(call: AtenCall) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of a GEMM-like call from its operands and result."""
    mats = [t for t in call.inputs if len(t.shape) >= 1]
    out = call.outputs[0]
    if call.name in ("addmm", "baddbmm", "addmv", "addbmm", "_addmm_activation", "addr") and len(mats) >= 3:
        mats = mats[1:]
    a, b = mats[0], mats[1] if len(mats) > 1 else mats[0]
    k = a.shape[-1] if a.shape else 1
    batch = math.prod(out.shape[:-2]) if len(out.shape) > 2 else 1
    m = out.shape[-2] if len(out.shape) >= 2 else (out.shape[0] if out.shape else 1)
    n = out.shape[-1] if len(out.shape) >= 2 else 1
    if call.name in ("mv", "addmv"):
        m, n = (out.shape[0] if out.shape else 1), 1
    return batch, m, n, k


def _aligned(t: TensorMeta) -> bool:
    """cuBLAS leading dimension and base are 16-byte multiples."""
    if len(t.shape) < 2 or t.offset_bytes % 16:
        return t.offset_bytes % 16 == 0
    lead = max(s for s, n in zip(t.stride[-2:], t.shape[-2:]) if n > 1) if any(n > 1 for n in t.shape[-2:]) else 1
    return (lead * t.elem_bytes) % 16 == 0


def gemm(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """One cuBLAS GEMM (bias folded into the epilogue)."""
    x = _float(call)
    dtype = dtype_class(x.dtype) if x else "fp32"
    batch, m, n, k = _mnk(call)
    cores = spec.cores
    for tile in TILES:                     # cuBLAS's heuristic picks smaller tiles for small outputs
        tiles = batch * math.ceil(m / tile) * math.ceil(n / tile)
        if tiles >= cores:
            break
    if tiles < cores:
        splits = max(1, min(math.ceil(cores / tiles), k // SPLIT_K_MIN))
        util = min(1.0, tiles * splits / cores)
    else:
        util = tiles / (math.ceil(tiles / cores) * cores)
    eff = spec.library_efficiency["gemm"] * util
    aligned = all(_aligned(t) for t in call.inputs + call.outputs if len(t.shape) >= 2)
    if not aligned:
        eff *= UNALIGNED_GEMM_EFF
    rate = "fp32" if dtype in ("fp32", "fp64") else f"tc:{dtype}"
    if dtype == "fp64":
        rate = "fp64"
    reads = sum(t.distinct_bytes for t in call.inputs)
    out = sum(t.nbytes for t in call.outputs)
    flops = call.flops or 2.0 * batch * m * n * k
    how = "CUDA cores (TF32 off)" if rate == "fp32" else f"tensor cores ({dtype})"
    return [EagerKernel(f"{call.name}: cuBLAS on {how}, {tiles} tiles" + ("" if aligned else ", unaligned"),
                        read_bytes=reads, serial_bytes=out, flops=flops, rate=rate, compute_eff=eff)]


def attention(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """``scaled_dot_product_attention``: the fused kernel ATen picks (see the module docstring)."""
    q, k, v = call.inputs[:3]
    d, dv = q.shape[-1], v.shape[-1]
    sq, sk = q.shape[-2], k.shape[-2]
    heads = q.numel // max(sq * d, 1)
    causal = bool(call.arg(5, "is_causal", False))
    flops = call.flops * (0.5 if causal else 1.0)
    dtype = dtype_class(q.dtype)
    io = sum(t.nbytes for t in call.inputs[:3]) + sum(t.nbytes for t in call.outputs)
    eff = spec.library_efficiency["gemm"]
    rate = f"tc:{dtype}" if dtype in ("fp16", "bf16") else "fp32"
    if dtype in ("fp16", "bf16") and d <= 256 and dv <= 256:
        return [EagerKernel("sdpa: FlashAttention-2", read_bytes=io, flops=flops, rate=rate, compute_eff=eff)]
    extra = 0.0
    if dv > 128:
        extra = 2.0 * 4.0 * heads * sq * dv * math.ceil(sk / MEM_EFF_KEYS_PER_BLOCK)
    return [EagerKernel("sdpa: memory-efficient (CUTLASS)" + (", fp32 output accumulated in global memory per "
                                                              "key block" if extra else ""),
                        read_bytes=io + extra / 2, write_bytes=extra / 2, flops=flops, rate=rate, compute_eff=eff)]
