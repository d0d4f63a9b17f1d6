"""What Triton's interpreter lacks that a GPU has, filled in for the verifier's child.

* libdevice: the stubs compute nothing in the interpreter (:mod:`.libdevice`).
* ``tl.atomic_xchg`` on float values: the interpreter's atomics support exchange for integers only
  ("Unsupported data type"), while a GPU exchanges any 16/32/64-bit word.  An exchange moves bits,
  so a float exchange is done as the integer exchange of the same bits.
* A scalar predicate in a block mask (``(offs < n) & (pid < limit)``): the interpreter's comparisons
  keep their operands' type on the result's handle (int32 for program ids), so broadcasting the
  scalar predicate made int32 data and the load refused the mask ("mask has unsupported dtype").
  A GPU broadcasts an i1; the splat of boolean data stays boolean here.
* A ``for`` loop's variable: an i32 scalar tensor on a GPU (``blk.to(tl.int64)``), a Python int
  here; :class:`LoopIndex` answers ``.to`` and ``.dtype`` (:mod:`.loop_hooks` yields it).
"""

from __future__ import annotations

import numpy as np

_INT_OF_WIDTH = {2: np.int16, 4: np.int32, 8: np.int64}


def _float_xchg(original):
    from triton._C.libtriton import ir
    from triton.runtime import interpreter as interp

    def create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope):
        data = getattr(val, "data", None)
        if rmwOp == ir.ATOMIC_OP.XCHG and isinstance(data, np.ndarray) and data.dtype.kind == "f" \
                and data.dtype.itemsize in _INT_OF_WIDTH:
            bits = interp.TensorHandle(data.view(_INT_OF_WIDTH[data.dtype.itemsize]), val.dtype.scalar)
            old = original(self, rmwOp, ptr, bits, mask, sem, scope)
            return interp.TensorHandle(np.asarray(old.data).view(data.dtype), val.dtype.scalar)
        return original(self, rmwOp, ptr, val, mask, sem, scope)
    create_atomic_rmw._kf_float_xchg = True
    return create_atomic_rmw


def _bool_splat(original):
    import triton.language as tl
    from triton.runtime import interpreter as interp

    def create_splat(self, ret_ty, arg):
        data = getattr(arg, "data", None)
        if isinstance(data, np.ndarray) and data.dtype == np.bool_ and data.size:
            return interp.TensorHandle(np.full(ret_ty.shape, data.reshape(-1)[0], dtype=np.bool_), tl.int1)
        return original(self, ret_ty, arg)
    create_splat._kf_bool_splat = True
    return create_splat


def install() -> None:
    """Fill the gaps (idempotent; the interpreter must be on)."""
    from triton.runtime import interpreter as interp
    from .libdevice import install as install_libdevice
    install_libdevice()
    if not getattr(interp.InterpreterBuilder.create_atomic_rmw, "_kf_float_xchg", False):
        interp.InterpreterBuilder.create_atomic_rmw = _float_xchg(interp.InterpreterBuilder.create_atomic_rmw)
    if not getattr(interp.InterpreterBuilder.create_splat, "_kf_bool_splat", False):
        interp.InterpreterBuilder.create_splat = _bool_splat(interp.InterpreterBuilder.create_splat)


class LoopIndex(int):
    """The variable of a ``for ... in range(...)`` loop in a kernel.  On a GPU it is an i32 scalar
    tensor (i64 when a bound is), so ``i.to(tl.int64)`` is legal there; the interpreter yields a
    Python int.  This int also answers ``.dtype`` and ``.to(...)`` as the GPU's tensor does, and
    stays an int in arithmetic, so what the trace records is unchanged."""

    __slots__ = ()

    @property
    def dtype(self):
        import triton.language as tl
        return tl.int32 if -2 ** 31 <= self < 2 ** 31 else tl.int64

    def to(self, dtype, *args, **kwargs):
        import triton.language as tl
        from triton.runtime import interpreter as interp
        own = self.dtype
        np_type = np.int32 if own == tl.int32 else np.int64
        tensor = tl.core.tensor(interp.TensorHandle(np.array([int(self)], dtype=np_type), own), own)
        return tensor.to(dtype, *args, **kwargs)
