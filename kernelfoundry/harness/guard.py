"""The dispatch guard: while a candidate's host code runs, torch may only allocate and make views.

The static gate refuses torch computation it can see; this guard refuses it however
it was reached (a tensor smuggled into a helper, a heuristics callback, a
constexpr argument, a copy hidden in ``reshape``).  A :class:`TorchDispatchMode`
sees every aten op that reaches a tensor; only allocations (``empty*``,
``zeros*``, ``new_*``) and views (ops torch marks ``is_view``) pass.  Fresh
``empty*`` allocations are filled with a poison value (NaN for floats) so that an
output element no kernel wrote shows up in the comparison.  The verifier's own
code pauses the guard (:meth:`DispatchGuard.paused`) where it needs torch.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_aten = torch.ops.aten
#: Allocations whose memory is undefined: poisoned (when poisoning is on).
EMPTY_OPS = frozenset({_aten.empty.memory_format, _aten.empty_like.default, _aten.empty_strided.default,
                       _aten.new_empty.default, _aten.new_empty_strided.default})
#: Zero-filled allocations (split-K accumulators).
ZERO_OPS = frozenset({_aten.zeros.default, _aten.zeros_like.default, _aten.new_zeros.default})
#: Ops torch does not mark as views that still copy nothing.
EXTRA_FREE_OPS = frozenset({_aten.sym_size.int, _aten.sym_stride.int, _aten.sym_numel.default,
                            _aten.sym_storage_offset.default, _aten.is_contiguous.default})


class TorchComputeRefused(RuntimeError):
    """The candidate's host code ran a torch op that computes or copies."""


def poison(tensor: torch.Tensor) -> torch.Tensor:
    """Fill *tensor* with a value a correct kernel never leaves behind (NaN, True or the integer max)."""
    if tensor.numel():
        if tensor.is_floating_point() or tensor.is_complex():
            tensor.fill_(float("nan"))
        elif tensor.dtype == torch.bool:
            tensor.fill_(True)
        else:
            tensor.fill_(torch.iinfo(tensor.dtype).max)
    return tensor


def _describe(func: Any) -> str:
    name = str(func.overloadpacket.__name__)
    if name in ("clone", "_unsafe_view", "copy_", "_to_copy", "contiguous"):
        return (f"aten.{name} copies a tensor on the host (a non-contiguous `.reshape()`/`.flatten()`, "
                "`.contiguous()` or a conversion); pass strides to the kernel instead")
    if name == "_local_scalar_dense":
        return "reading a tensor's value on the host (`.item()`, `int(t)`, `if t:`) is not allowed"
    return f"aten.{name} computes with torch"


def _aligned(func: Any, args: tuple, kwargs: dict) -> torch.Tensor | None:
    """The allocation *func* asks for, placed where every input lives (:func:`tiled.aligned_empty`: a
    2 MiB-aligned mapping of its own, zero pages committed only where written), strides kept; None where
    that does not apply (not a strided CPU tensor) or mapping fails (the allocator's own then).  The
    allocator's addresses depend on the size asked for and on the job's history (a large buffer is mapped
    page-aligned, a small one comes from the heap), so a kernel could tell the target's trace from the
    checks by its own output's address."""
    proto = next((a for a in args if isinstance(a, torch.Tensor)), None)      # *_like, new_*
    device = kwargs.get("device")
    device = torch.device(device) if device is not None else (proto.device if proto is not None else None)
    if (device is not None and device.type != "cpu") or kwargs.get("layout") not in (None, torch.strided):
        return None
    try:
        meta = func(*args, **{**kwargs, "device": torch.device("meta"), "pin_memory": False}
                    if "pin_memory" in kwargs else {**kwargs, "device": torch.device("meta")})
    except Exception:  # noqa: BLE001 - an allocation meta cannot describe: the allocator's own
        return None
    if not isinstance(meta, torch.Tensor) or meta.layout != torch.strided or meta.dtype.is_complex:
        return None
    from .tiled import aligned_empty
    elements = 0 if meta.numel() == 0 else \
        meta.storage_offset() + 1 + sum((n - 1) * st for n, st in zip(meta.shape, meta.stride()))
    base = aligned_empty((elements,), meta.dtype)
    if base is None:
        return None
    return base.as_strided(tuple(meta.shape), tuple(meta.stride()), meta.storage_offset())


class DispatchGuard(TorchDispatchMode):
    """Refuse every aten op but allocations and views; poison ``empty*`` results when *poison_empty*."""

    def __init__(self, *, poison_empty: bool, poison_max_bytes: int | None = None):
        super().__init__()
        self.poison_empty = poison_empty
        self.poison_max_bytes = poison_max_bytes       # larger ones are left as the allocator gives them
        self.refused: str | None = None
        self._paused = 0
        self.allocations: list[torch.Tensor] = []
        self.zero_filled_bytes: list[int] = []     # each zeros* allocation: a fill kernel on a GPU

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Let the verifier's own torch calls through."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._paused:
            return func(*args, **kwargs)
        if func in EMPTY_OPS or func in ZERO_OPS:
            out = _aligned(func, args, kwargs)
            if out is None:
                out = func(*args, **kwargs)
            if func in EMPTY_OPS and self.poison_empty and (
                    self.poison_max_bytes is None or out.numel() * out.element_size() <= self.poison_max_bytes):
                poison(out)
            if func in ZERO_OPS and isinstance(out, torch.Tensor):
                self.zero_filled_bytes.append(int(out.numel() * out.element_size()))
            self.allocations.append(out)
            return out
        if getattr(func, "is_view", False) or func in EXTRA_FREE_OPS:
            return func(*args, **kwargs)
        why = _describe(func)
        if self.refused is None:
            self.refused = why
        raise TorchComputeRefused(f"the candidate's host code ran a torch op: {why}. launch may only allocate "
                                  "(torch.empty*, torch.zeros*), make views and launch kernels; all computation "
                                  "must happen in @triton.jit kernels.")
