"""Rules for TensorIterator ops (elementwise, copies, fills), concatenation and dropout.

ATen runs an elementwise op as one TensorIterator kernel (``aten/src/ATen/native/cuda/Loops.cuh``,
``CUDALoops.cuh``): it reads every distinct input element once (a broadcast operand's elements
are re-read from cache) and writes the output once.  When every operand is contiguous after
dimension coalescing, the kernel uses vectorised 16-byte loads (``launch_vectorized_kernel``);
otherwise (a broadcast operand with stride 0, a transposed or strided view, a 0-dim GPU
tensor) it takes the unrolled path with per-element offset calculators
(``launch_legacy_kernel`` / ``unrolled_elementwise_kernel``), which is slower.
"""

from __future__ import annotations

from ..hardware import HardwareSpec
from .kernels import EagerKernel
from .record import AtenCall, TensorMeta

#: The unrolled (non-vectorised) path relative to the vectorised one.  Fitted on the H100 set:
#: the two flips of KernelBench L1-91 (restrided input) run at ~2.6 TB/s = 0.85 of copy, and the
#: broadcast divisions of L1-37/38/39 (x / norm) fit the same share.
STRIDED_FACTOR = 0.85
#: A copy between different memory orders (a transpose made contiguous): reads or writes cross
#: rows, so half of each 32-byte sector moved is wasted (approx: no measurement in the sets).
TRANSPOSE_EFF = 0.5

#: Ops that only write their output.
FILLS = frozenset({"fill_", "zero_", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "fill",
                   "scalar_tensor", "arange", "linspace", "new_zeros", "new_ones", "new_full",
                   "bernoulli_", "uniform_", "normal_", "rand", "randn", "rand_like", "randn_like"})
#: Copies whose operands may differ in memory order.
COPIES = frozenset({"copy_", "clone", "_to_copy", "contiguous", "to", "_copy_from", "lift_fresh_copy"})


def vec_eff(spec: HardwareSpec) -> float:
    """Vectorised TensorIterator kernels' share of the copy bandwidth (``library_efficiency.elementwise``:
    KernelBench L1-19..32, ReLU ... HardTanh of 4096 x 393216 fp32, run at the H100's 3.0 TB/s copy anchor)."""
    return spec.library_efficiency["elementwise"]


def strided_eff(spec: HardwareSpec) -> float:
    """The unrolled (strided / broadcast operand) path's share of the copy bandwidth."""
    return STRIDED_FACTOR * vec_eff(spec)


def _same_order(a: TensorMeta, b: TensorMeta) -> bool:
    def order(t):
        return [i for _, i in sorted((-st, i) for i, (sz, st) in enumerate(zip(t.shape, t.stride)) if sz != 1)]
    return a.shape == b.shape and order(a) == order(b)


def vectorized(call: AtenCall) -> bool:
    """True when TensorIterator would take its vectorised path for *call*'s operands."""
    out = call.outputs[0] if call.outputs else None
    for t in call.inputs + call.outputs:
        if t.numel <= 1:            # 0-dim / one-element operands: a kernel argument or a broadcast
            if t.numel == 1 and t.shape and out is not None and out.numel > 1:
                return False        # a one-element GPU tensor broadcast with stride 0
            continue
        if not t.is_dense or (out is not None and t.shape != out.shape) or (out is not None and not _same_order(t, out)):
            return False
    return True


def elementwise(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """One TensorIterator kernel: distinct inputs read once, outputs written once."""
    writes = sum(t.nbytes for t in call.outputs)
    if call.name in FILLS:
        return [EagerKernel(f"{call.name}: fill", write_bytes=writes, mem_eff=vec_eff(spec))]
    reads = sum(t.distinct_bytes for t in call.inputs if t.numel > 1)
    if call.inplace and call.inputs:    # the output aliases the first input: read and written once each
        writes = call.inputs[0].nbytes
    if call.name in COPIES and call.inputs and call.outputs and not _same_order(call.inputs[0], call.outputs[0]):
        return [EagerKernel(f"{call.name}: copy across memory orders", read_bytes=reads, write_bytes=writes,
                            mem_eff=TRANSPOSE_EFF * vec_eff(spec))]
    vec = vectorized(call)
    return [EagerKernel(f"{call.name}: elementwise, {'vectorised' if vec else 'unrolled (strided/broadcast)'}",
                        read_bytes=reads, write_bytes=writes, mem_eff=vec_eff(spec) if vec else strided_eff(spec))]


def concatenate(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """``cat``: one batched copy kernel (``CatArrayBatchedCopy``, Shape.cu) with per-element offsets."""
    reads = sum(t.nbytes for t in call.inputs)
    writes = sum(t.nbytes for t in call.outputs)
    return [EagerKernel("cat: batched copy", read_bytes=reads, write_bytes=writes, mem_eff=strided_eff(spec))]


def flip(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """``flip``: a TensorIterator copy from a restrided (reversed) input: the unrolled path."""
    return [EagerKernel("flip: restrided copy", read_bytes=call.inputs[0].nbytes,
                        write_bytes=call.outputs[0].nbytes, mem_eff=strided_eff(spec))]


def dropout(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """``native_dropout`` (training): one fused kernel reads x, writes the output and a bool mask."""
    return [EagerKernel("native_dropout: fused", read_bytes=call.inputs[0].nbytes,
                        write_bytes=sum(t.nbytes for t in call.outputs), mem_eff=vec_eff(spec))]


def gather(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """Indexing ops (``index``, ``gather``, ``index_select``, ``embedding``, ``nll_loss``): output-sized
    reads of the source at the indices, the indices, and the output written once."""
    out = sum(t.nbytes for t in call.outputs)
    index = sum(t.nbytes for t in call.inputs if t.dtype in ("int64", "int32", "bool") and t.numel > 1)
    return [EagerKernel(f"{call.name}: gather", read_bytes=out + index, write_bytes=out, mem_eff=strided_eff(spec))]
