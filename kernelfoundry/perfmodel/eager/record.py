"""Record the aten ops a reference dispatches on ``meta`` tensors, with the arguments the rules need.

A :class:`TorchDispatchMode` sees every aten op after PyTorch's composite functions have been
decomposed, which is what eager CUDA launches, with three exceptions this recorder corrects:

* views (``is_view``) and ``_unsafe_view``/``_reshape_alias`` copy nothing on a GPU either
  (``_unsafe_view`` is how ``matmul`` folds batch dims back: ATen ``LinearAlgebra.cpp``), so
  they are not recorded;
* functions whose CUDA implementation is one fused kernel but whose meta run takes a
  composite path are caught one level up, by a :class:`TorchFunctionMode`, and recorded as the
  fused op (their inner ops are not): ``scaled_dot_product_attention`` (on meta it takes the
  math path and upcasts; on CUDA it runs a fused kernel) and ``dropout`` in training
  (``native_dropout`` on CUDA: ATen ``Dropout.cpp`` ``is_fused_kernel_acceptable``);
* allocations (``empty*``) launch nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

#: Ops that allocate or alias: no kernel.
FREE_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "lift_fresh", "detach", "alias",
    "_to_copy_meta", "resize_", "set_", "_local_scalar_dense", "_unsafe_view", "_reshape_alias", "view",
    "reshape", "as_strided", "expand", "unsqueeze", "squeeze", "permute", "transpose", "t", "select", "slice",
    "narrow", "split", "split_with_sizes", "unbind", "chunk", "diagonal", "view_as", "expand_as",
})


@dataclass(frozen=True)
class TensorMeta:
    """What the rules need to know of one tensor operand."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str            # torch dtype name without "torch.", e.g. "float32"
    elem_bytes: int
    offset_bytes: int     # storage offset x element size (alignment of views)

    @classmethod
    def of(cls, t: torch.Tensor) -> "TensorMeta":
        return cls(tuple(int(s) for s in t.shape), tuple(int(s) for s in t.stride()),
                   str(t.dtype).replace("torch.", ""), t.element_size(), int(t.storage_offset()) * t.element_size())

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> float:
        return float(self.numel * self.elem_bytes)

    @property
    def distinct_bytes(self) -> float:
        """Bytes of distinct elements (broadcast dims, stride 0, count once)."""
        n = 1
        for size, stride in zip(self.shape, self.stride):
            if stride != 0:
                n *= size
        return float(n * self.elem_bytes)

    @property
    def is_contiguous(self) -> bool:
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.stride)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    @property
    def is_dense(self) -> bool:
        """Contiguous in some dim order (a permuted dense tensor): TensorIterator coalesces it."""
        dims = sorted((st, sz) for sz, st in zip(self.shape, self.stride) if sz != 1)
        expected = 1
        for st, sz in dims:
            if st != expected:
                return False
            expected *= sz
        return True


@dataclass
class AtenCall:
    """One recorded op: its name, tensor operands, other arguments and (for GEMM-likes) FLOPs."""

    name: str                          # overload packet name, e.g. "convolution", "_softmax"
    inputs: list[TensorMeta]           # tensor arguments, in argument order (lists flattened)
    outputs: list[TensorMeta]
    args: list[Any]                    # positional arguments; tensors replaced by their TensorMeta
    kwargs: dict[str, Any] = field(default_factory=dict)
    flops: float = 0.0                 # torch's flop registry (GEMM, conv, attention); 0 otherwise

    @property
    def inplace(self) -> bool:
        return self.name.endswith("_") and not self.name.startswith("_")

    def arg(self, i: int, name: str, default: Any = None) -> Any:
        """Positional argument *i* or keyword *name*."""
        if name in self.kwargs:
            return self.kwargs[name]
        return self.args[i] if i < len(self.args) else default


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x)


def _plain(obj):
    if isinstance(obj, torch.Tensor):
        return TensorMeta.of(obj)
    if isinstance(obj, (list, tuple)):
        return [_plain(x) for x in obj]
    if isinstance(obj, torch.dtype):
        return str(obj).replace("torch.", "")
    if isinstance(obj, (int, float, bool, str)) or obj is None:
        return obj
    return str(obj)


def _call(name, args, kwargs, out, flops=0.0) -> AtenCall:
    return AtenCall(name=name, inputs=[TensorMeta.of(t) for t in _tensors(args)] +
                    [TensorMeta.of(t) for t in _tensors(kwargs)],
                    outputs=[TensorMeta.of(t) for t in _tensors(out)], args=[_plain(a) for a in args],
                    kwargs={k: _plain(v) for k, v in kwargs.items()}, flops=float(flops))


class _DispatchRecorder(TorchDispatchMode):
    def __init__(self, calls: list[AtenCall], suppress: list[int]):
        super().__init__()
        self.calls, self.suppress = calls, suppress

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if self.suppress[0] or getattr(func, "is_view", False) or name in FREE_OPS:
            return out
        flops = 0.0
        if func.overloadpacket in flop_registry:
            flops = float(flop_registry[func.overloadpacket](*args, **kwargs, out_val=out))
        self.calls.append(_call(name, args, kwargs, out, flops))
        return out


def _sdpa_flops(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> float:
    batch = q.numel() // (q.shape[-2] * q.shape[-1])
    return 2.0 * batch * q.shape[-2] * k.shape[-2] * (q.shape[-1] + v.shape[-1])


class _FunctionRecorder(TorchFunctionMode):
    """Records fused CUDA functions as one op and hides the composite ops of their meta run."""

    def __init__(self, calls: list[AtenCall], suppress: list[int]):
        super().__init__()
        self.calls, self.suppress = calls, suppress

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            name = "scaled_dot_product_attention"
        elif func is F.dropout and (kwargs.get("training", args[2] if len(args) > 2 else True)):
            name = "native_dropout"
        else:
            return func(*args, **kwargs)
        self.suppress[0] += 1
        try:
            out = func(*args, **kwargs)
        finally:
            self.suppress[0] -= 1
        flops = _sdpa_flops(*list(_tensors(args))[:3]) if name == "scaled_dot_product_attention" else 0.0
        call = _call(name, args, kwargs, out, flops)
        if name == "native_dropout":      # the fused kernel also writes a bool mask of the input's size
            x = call.inputs[0]
            call.outputs.append(TensorMeta(x.shape, x.stride, "bool", 1, 0))
        self.calls.append(call)
        return out


def record(fn, *args) -> tuple[list[AtenCall], Any]:
    """Run ``fn(*args)`` (meta tensors) and return the recorded calls and its result."""
    calls: list[AtenCall] = []
    suppress = [0]
    with _DispatchRecorder(calls, suppress), _FunctionRecorder(calls, suppress):
        result = fn(*args)
    return calls, result
