"""The eager-PyTorch baseline and the speed-of-light bound of a task's reference.

The reference (the task author's PyTorch spec, trusted code) runs once per shape on
``meta`` tensors under a :class:`TorchDispatchMode` that records every aten op with its
FLOPs (torch's flop registry for GEMM-like ops) and bytes (distinct input elements +
output).  Each op then costs, per hardware, its roofline time at library-grade
efficiency (``library_efficiency`` in the hardware file) plus the eager per-op overhead.
View and allocation ops cost nothing.

Speed-of-light = max(GEMM FLOPs / matrix peak of the narrowest float input dtype,
vector FLOPs / vector peak, (inputs + outputs) bytes / DRAM peak).
PyTorch runs fp32 matmuls without TF32 by default, so an fp32 GEMM in the eager
baseline runs at the fp32 vector rate.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from ..task import DTYPE_BYTES, Task
from .hardware import HardwareSpec, dtype_class

REDUCTIONS = frozenset({
    "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "var", "std", "var_mean",
    "std_mean", "norm", "linalg_vector_norm", "logsumexp", "_softmax", "_log_softmax", "softmax",
    "log_softmax", "cumsum", "cumprod", "all", "any", "native_layer_norm", "native_group_norm",
    "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
    "nll_loss_forward", "nll_loss2d_forward", "topk", "sort", "cummax", "cummin", "logcumsumexp",
    "_fused_rms_norm", "rms_norm", "count_nonzero", "nansum", "median", "mode", "kthvalue"})
FREE = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "lift_fresh",
                  "detach", "alias", "_to_copy_meta", "resize_", "set_", "_local_scalar_dense"})


@dataclass
class OpCost:
    """One recorded aten op."""

    name: str
    kind: str            # "gemm" | "elementwise" | "reduction"
    flops: float         # GEMM flops (gemm) or element ops (others)
    bytes: float         # distinct input elements + output, in bytes
    dtype: str           # dtype class of the first tensor input


@dataclass
class ReferenceProfile:
    """The reference's ops at one shape, and its compulsory traffic."""

    ops: list[OpCost]
    input_bytes: float
    output_bytes: float
    min_float_dtype: str
    exact: bool = True          # False when the meta run failed and a copy-like estimate stands in
    note: str = ""
    gemm_flops: float = field(init=False)
    vector_flops: float = field(init=False)

    def __post_init__(self):
        self.gemm_flops = sum(o.flops for o in self.ops if o.kind == "gemm")
        self.vector_flops = sum(o.flops for o in self.ops if o.kind != "gemm")


def _distinct_bytes(t: torch.Tensor) -> float:
    """Bytes of distinct elements a tensor view addresses (broadcast dims count once)."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return float(n * t.element_size())


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x)


class _OpRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops: list[OpCost] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if getattr(func, "is_view", False) or name in FREE:
            return out
        ins = list(_tensors(args)) + list(_tensors(kwargs))
        outs = list(_tensors(out))
        nbytes = sum(_distinct_bytes(t) for t in ins) + sum(_distinct_bytes(t) for t in outs)
        dtype = dtype_class(str(ins[0].dtype)) if ins else "fp32"
        if func.overloadpacket in flop_registry:
            flops = float(flop_registry[func.overloadpacket](*args, **kwargs, out_val=out))
            self.ops.append(OpCost(name, "gemm", flops, nbytes, dtype))
        else:
            elems = max([t.numel() for t in ins + outs] or [0])
            kind = "reduction" if name in REDUCTIONS else "elementwise"
            self.ops.append(OpCost(name, kind, float(elems), nbytes, dtype))
        return out


_TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
                 "float64": torch.float64, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
                 "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
_PROFILES: dict[tuple, ReferenceProfile] = {}


def _key(task: Task, shape: dict[str, int]) -> tuple:
    digest = hashlib.sha256(task.reference.encode()).hexdigest()[:16]
    inputs = tuple((s.name, s.dtype, s.concrete_shape(shape)) for s in task.inputs)
    return (task.name, digest, inputs)


def profile_reference(task: Task, shape: dict[str, int]) -> ReferenceProfile:
    """Run the reference on meta tensors at *shape* and record its ops (cached)."""
    key = _key(task, shape)
    if key in _PROFILES:
        return _PROFILES[key]
    floats = [s.dtype for s in task.inputs if s.is_float]
    min_float = min(floats, key=lambda d: DTYPE_BYTES[d]) if floats else "float32"
    input_bytes = float(task.input_bytes(shape))
    recorder = _OpRecorder()
    try:
        namespace: dict = {"torch": torch}
        exec(compile(task.reference, f"<reference of {task.name}>", "exec"), namespace)
        args = [torch.empty(s.concrete_shape(shape), dtype=_TORCH_DTYPES[s.dtype], device="meta")
                for s in task.inputs]
        with recorder:
            result = namespace["reference"](*args)
        output_bytes = float(sum(t.numel() * t.element_size() for t in _tensors(result)))
        profile = ReferenceProfile(recorder.ops, input_bytes, output_bytes, dtype_class(min_float))
    except Exception as exc:  # data-dependent ops cannot run on meta tensors
        largest = max(math.prod(s.concrete_shape(shape)) * DTYPE_BYTES[s.dtype] for s in task.inputs)
        op = OpCost("estimate", "elementwise", largest / 4.0, input_bytes + largest, dtype_class(min_float))
        profile = ReferenceProfile([op], input_bytes, float(largest), dtype_class(min_float), exact=False,
                                   note=f"reference did not run on meta tensors ({type(exc).__name__}: {exc}); "
                                        f"baseline estimated as one pass over inputs and an input-sized output")
    _PROFILES[key] = profile
    return profile


def op_seconds(op: OpCost, spec: HardwareSpec) -> float:
    """One eager op at library-grade efficiency, plus the eager per-op overhead."""
    lib = spec.library_efficiency
    if op.kind == "gemm":
        rate = spec.matrix_peak(op.dtype) if op.dtype != "fp32" else 0.0
        rate = rate or spec.vector_peak("fp32")
        t = max(op.flops / (rate * lib["gemm"]), op.bytes / (spec.dram_bw * lib["elementwise"]))
    else:
        eff = lib["reduction"] if op.kind == "reduction" else lib["elementwise"]
        t = max(op.bytes / (spec.dram_bw * eff), op.flops / (spec.vector_peak("fp32") / 2.0))
    return t + spec.eager_op_overhead_us * 1e-6


def eager_seconds(profile: ReferenceProfile, spec: HardwareSpec) -> float:
    """Estimated eager-PyTorch latency of the reference on *spec*."""
    if not profile.ops:      # a reference that only views its input still launches nothing
        return spec.eager_op_overhead_us * 1e-6
    return sum(op_seconds(op, spec) for op in profile.ops)


def sol_seconds(profile: ReferenceProfile, spec: HardwareSpec) -> float:
    """Speed-of-light latency: the larger of the compute and compulsory-traffic bounds."""
    rate = spec.matrix_peak(profile.min_float_dtype) or spec.vector_peak("fp32")
    compute = profile.gemm_flops / rate + profile.vector_flops / (spec.vector_peak("fp32") / 2.0)
    memory = (profile.input_bytes + profile.output_bytes) / spec.dram_bw
    return max(compute, memory)


def baseline(task: Task, shape: dict[str, int], spec: HardwareSpec) -> tuple[float, float]:
    """(eager estimate, speed-of-light) in seconds for *task* at *shape* on *spec*."""
    profile = profile_reference(task, shape)
    return eager_seconds(profile, spec), sol_seconds(profile, spec)
