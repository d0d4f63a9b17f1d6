"""Rules for convolutions (cuDNN, ATen's depthwise kernels) and pooling.

Convolutions go to cuDNN (``Convolution.cpp`` ``select_conv_backend``) with
``torch.backends.cudnn.allow_tf32 = True`` by default, so fp32 convs run on the TF32 tensor
cores when cuDNN finds a tensor-core kernel: channels per group a multiple of 4 (TF32) / 8
(fp16) (cuDNN Developer Guide, "Tensor Core operations").  Otherwise (3 input channels, say)
they run on the CUDA cores (FFMA).  cuDNN's kernels are implicit GEMMs: M = output pixels,
N = output channels per group, K = input channels per group x kernel taps; short K and narrow N
leave the tensor cores underfed, which the efficiency curve ``E K/(K + K_half) N/(N + N_half)``
describes (``cudnn.benchmark`` is False by default: cuDNN's heuristic picks the algorithm).

Transposed convs run as cuDNN's backward-data kernels.  cuDNN's algorithm choice is not
published; what the KernelBench H100 measurements fit (and the rule assumes): 3-D and grouped
ones run on the CUDA cores; a strided one costs its useful taps (the stride decomposed into
sub-convolutions), except grouped ones and dilated 1-D/2-D ones, which cost the dense
zero-inserted convolution over the output.  The constants below are fitted by
``python -m kernelfoundry.fidelity.calibrate experiments/fidelity/kernelbench_h100.yaml``.

Depthwise convs (groups = input channels) use ATen's own kernels (``DepthwiseConv2d.cu``,
``DepthwiseConv3d.cu``: one thread per output looping over its taps), pooling likewise
(``DilatedMaxPool2d.cu``/``3d.cu``, ``AveragePool2d.cu``/``3d.cu``; 1-D pools are 2-D pools
over a unit dim, and max pools also write int64 indices): both are issue-bound on index
arithmetic, bounds checks and loads, ``WINDOW_LANES_PER_TAP`` lane instructions per tap.
"""

from __future__ import annotations

import math

from ..hardware import HardwareSpec, dtype_class
from .kernels import EagerKernel
from .record import AtenCall

#: Forward convs on the tensor cores: E, K_half, N_half.  Fitted on the H100 set's standard
#: convs with >= 16 input channels (L1-55, 56, 62, 63, 67, 76, 80: 45-199 TFLOP/s of 495 TF32).
CONV_TC = (0.55, 250.0, 40.0)
#: Backward-data (transposed) convs on the tensor cores: fitted on L1-57, 64, 65, 69, 71, 74, 78, 79, 81.
CONV_T_TC = (0.40, 330.0, 27.0)
#: Convs on the CUDA cores: E, K_half of the fp32 FMA peak.  Fitted on the 3-input-channel
#: convs (L1-50, 54, 59, 60, 66) and the 3-D transposed ones (L1-61, 70, 72, 73, 77).
CONV_FFMA = (0.29, 17.0)
#: Lane instructions per tap of a window kernel (pooling, depthwise conv with a specialised
#: kernel size).  Fitted on the H100 set's pools (L1-41..46) and 3x3 depthwise convs (L1-82, 84).
WINDOW_LANES_PER_TAP = 40.0
#: ATen's depthwise kernel is templated on the kernel size for 1x1, 3x3 and 5x5
#: (``conv_depthwise2d_forward_kernel<KW>``); other sizes run the generic kernel with runtime
#: loop bounds: (lanes per output, lanes per tap).  Fitted on L1-83 (3x1) and L1-85 (3x7).
DW_GENERIC_LANES = (300.0, 12.0)
DW_SPECIALISED = ((1, 1), (3, 3), (5, 5))

POOLS = frozenset({"max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool2d", "avg_pool3d",
                   "max_pool1d_with_indices", "avg_pool1d", "max_pool2d", "max_pool3d"})


def _ints(v, n: int, default: int) -> list[int]:
    if v is None or v == []:
        return [default] * n
    if isinstance(v, int):
        return [v] * n
    v = list(v)
    return v * n if len(v) == 1 else v


def _window(call: AtenCall, spec: HardwareSpec, what: str, taps: int,
            lanes: tuple[float, float] | None = None) -> EagerKernel:
    out = call.outputs[0]
    reads = sum(t.nbytes for t in call.inputs)
    writes = sum(t.nbytes for t in call.outputs)
    per_output, per_tap = lanes or (0.0, WINDOW_LANES_PER_TAP)
    return EagerKernel(f"{what}: a thread per output, {taps} taps", read_bytes=reads, write_bytes=writes,
                       flops=out.numel * (per_output + taps * per_tap), rate="lanes")


def pooling(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """A pooling op: one thread per output over its window (taps = the kernel's volume)."""
    d = 3 if "3d" in call.name else 2
    kernel = _ints(call.arg(1, "kernel_size", None), d, 1)
    return [_window(call, spec, call.name, math.prod(kernel[-d:]))]


def convolution(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    x, w = call.inputs[0], call.inputs[1]
    out = call.outputs[0]
    d = len(x.shape) - 2
    stride = _ints(call.arg(3, "stride", 1), d, 1)
    dilation = _ints(call.arg(5, "dilation", 1), d, 1)
    transposed = bool(call.arg(6, "transposed", False))
    groups = int(call.arg(8, "groups", 1) or 1)
    cin, cout = x.shape[1], out.shape[1]
    kvol = math.prod(w.shape[2:])
    if not transposed and groups > 1 and groups == cin and cout % cin == 0:
        generic = d == 2 and tuple(w.shape[2:]) not in DW_SPECIALISED
        return [_window(call, spec, f"depthwise conv{d}d (ATen{', generic kernel' if generic else ''})", kvol,
                        DW_GENERIC_LANES if generic else None)]
    k_dim = (cin // groups) * kvol
    n_dim = cout // groups
    flops = call.flops or 2.0 * out.numel * k_dim
    dense = transposed and max(stride) > 1 and (groups > 1 or (max(dilation) > 1 and d <= 2))
    if dense:
        flops = 2.0 * out.numel * k_dim
    dtype = dtype_class(x.dtype)
    channels_ok = (cin // groups) % (8 if dtype in ("fp16", "bf16") else 4) == 0
    cuda_cores = not channels_ok or (transposed and (d == 3 or groups > 1))
    if cuda_cores:
        e, k_half = CONV_FFMA
        eff, rate, unit = e * k_dim / (k_dim + k_half), "fp32", "CUDA cores"
    else:
        e, k_half, n_half = CONV_T_TC if transposed else CONV_TC
        eff = e * k_dim / (k_dim + k_half) * n_dim / (n_dim + n_half)
        rate, unit = f"tc:{dtype}", "tensor cores" + (" (TF32)" if dtype == "fp32" else "")
    kind = "backward-data (transposed)" if transposed else "implicit GEMM"
    reads = sum(t.nbytes for t in call.inputs)
    return [EagerKernel(f"conv{d}d: cuDNN {kind} on {unit}, K={k_dim}, N={n_dim}" + (", zero-inserted" if dense else ""),
                        read_bytes=reads, write_bytes=out.nbytes, flops=flops, rate=rate, compute_eff=eff)]
