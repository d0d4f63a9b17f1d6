"""What Triton's interpreter lacks that a GPU has, filled in for the verifier's child.

* libdevice: the stubs compute nothing in the interpreter (:mod:`.libdevice`).
* ``tl.atomic_xchg`` on float values: the interpreter's atomics support exchange for integers only
  ("Unsupported data type"), while a GPU exchanges any 16/32/64-bit word.  An exchange moves bits,
  so a float exchange is done as the integer exchange of the same bits.
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


def install() -> None:
    """Fill the gaps (idempotent; the interpreter must be on)."""
    from triton.runtime import interpreter as interp
    from .libdevice import install as install_libdevice
    install_libdevice()
    if not getattr(interp.InterpreterBuilder.create_atomic_rmw, "_kf_float_xchg", False):
        interp.InterpreterBuilder.create_atomic_rmw = _float_xchg(interp.InterpreterBuilder.create_atomic_rmw)
