"""The eager-PyTorch baseline and the speed-of-light bound of a task's reference.

The reference (the task author's PyTorch spec, trusted code) runs once per shape on ``meta``
tensors; :mod:`.eager` records every aten op with its arguments and prices it, per hardware,
as the kernels ATen really launches for it (passes, launch shape, cuBLAS / cuDNN paths), in a
host + GPU timeline of an event-timed call after an L2 flush (KernelBench's method).

Speed-of-light = max(GEMM FLOPs / matrix peak of the narrowest float input dtype + vector
FLOPs / vector peak, (inputs + outputs) bytes / DRAM peak), at raw peaks.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..task import DTYPE_BYTES, Task
from .eager import KERNELBENCH, AtenCall, EagerEstimate, EagerKernel, Timing, estimate, kernel_seconds, record
from .eager.record import _tensors
from .eager.rules_reduce import REDUCTIONS, SCANS
from .hardware import HardwareSpec, dtype_class

#: Ops whose cost is a reduction over their input (for :class:`OpCost` kinds).
REDUCTION_OPS = REDUCTIONS | SCANS | {
    "_softmax", "_log_softmax", "_safe_softmax", "logsumexp", "native_layer_norm", "native_group_norm",
    "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
    "nll_loss_forward", "nll_loss2d_forward", "topk", "sort", "_fused_rms_norm"}


@dataclass
class OpCost:
    """One recorded aten op, summarised (name, kind, flops, bytes, dtype)."""

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
    input_count: int = 0
    calls: list[AtenCall] = field(default_factory=list)
    gemm_flops: float = field(init=False)
    vector_flops: float = field(init=False)

    def __post_init__(self):
        self.gemm_flops = sum(o.flops for o in self.ops if o.kind == "gemm")
        self.vector_flops = sum(o.flops for o in self.ops if o.kind != "gemm")


def op_cost(call: AtenCall) -> OpCost:
    """The summary of one recorded call."""
    nbytes = sum(t.distinct_bytes for t in call.inputs) + sum(t.distinct_bytes for t in call.outputs)
    dtype = dtype_class(call.inputs[0].dtype) if call.inputs else "fp32"
    if call.flops:
        return OpCost(call.name, "gemm", call.flops, nbytes, dtype)
    elems = max([t.numel for t in call.inputs + call.outputs] or [0])
    return OpCost(call.name, "reduction" if call.name in REDUCTION_OPS else "elementwise", float(elems), nbytes, dtype)


_TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
                 "float64": torch.float64, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
                 "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
_PROFILES: dict[tuple, ReferenceProfile] = {}


def profile_function(reference: str, inputs: list[tuple[str, tuple[int, ...], str]], *,
                     name: str = "reference") -> ReferenceProfile:
    """Run ``reference(*inputs)`` (source defining ``def reference``) on meta tensors and record its ops.

    *inputs* are ``(name, shape, dtype)`` in argument order; ``shape`` may be ``()`` (a 0-d tensor).
    The source sees ``torch``, ``F`` (``torch.nn.functional``) and ``math``.  Cached.
    """
    key = (hashlib.sha256(reference.encode()).hexdigest()[:16], tuple((n, tuple(s), d) for n, s, d in inputs))
    if key in _PROFILES:
        return _PROFILES[key]
    floats = [d for _, _, d in inputs if d in ("float32", "float16", "bfloat16", "float64")]
    min_float = min(floats, key=lambda d: DTYPE_BYTES[d]) if floats else "float32"
    input_bytes = float(sum(math.prod(s) * DTYPE_BYTES[d] for _, s, d in inputs))
    try:
        namespace: dict = {"torch": torch, "F": F, "math": math}
        exec(compile(reference, f"<reference of {name}>", "exec"), namespace)
        args = [torch.empty(tuple(s), dtype=_TORCH_DTYPES[d], device="meta") for _, s, d in inputs]
        calls, result = record(namespace["reference"], *args)
        output_bytes = float(sum(t.numel() * t.element_size() for t in _tensors(result)))
        profile = ReferenceProfile([op_cost(c) for c in calls], input_bytes, output_bytes, dtype_class(min_float),
                                   input_count=len(inputs), calls=calls)
    except Exception as exc:  # data-dependent ops cannot run on meta tensors
        largest = max((math.prod(s) * DTYPE_BYTES[d] for _, s, d in inputs), default=0)
        op = OpCost("estimate", "elementwise", largest / 4.0, input_bytes + largest, dtype_class(min_float))
        profile = ReferenceProfile([op], input_bytes, float(largest), dtype_class(min_float), exact=False,
                                   input_count=len(inputs),
                                   note=f"reference did not run on meta tensors ({type(exc).__name__}: {exc}); "
                                        f"baseline estimated as one pass over inputs and an input-sized output")
    _PROFILES[key] = profile
    return profile


def profile_reference(task: Task, shape: dict[str, int]) -> ReferenceProfile:
    """Run the task's reference on meta tensors at *shape* and record its ops (cached)."""
    inputs = [(s.name, s.concrete_shape(shape), s.dtype) for s in task.inputs]
    return profile_function(task.reference, inputs, name=task.name)


def eager_estimate(profile: ReferenceProfile, spec: HardwareSpec, timing: Timing = KERNELBENCH) -> EagerEstimate:
    """The eager call priced on *spec*, with its kernels (see :mod:`.eager`)."""
    if not profile.exact:
        k = EagerKernel("estimate: one pass over the inputs and an input-sized output",
                        read_bytes=profile.input_bytes, write_bytes=profile.output_bytes)
        s = kernel_seconds(k, spec)
        return EagerEstimate(seconds=s, ops=[("estimate", [(k, s)])])
    return estimate(profile.calls, spec, timing)


def eager_seconds(profile: ReferenceProfile, spec: HardwareSpec, timing: Timing = KERNELBENCH) -> float:
    """Estimated eager-PyTorch latency of the reference on *spec* (KernelBench-style timing by default)."""
    return eager_estimate(profile, spec, timing).seconds


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
