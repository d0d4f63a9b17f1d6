"""Faster equivalents of pure helpers that Triton's interpreter calls for every block op.

The interpreter runs each program as Python over NumPy, so its per-op helpers are the verifier's
hot path (docs/verifier.md, "Where the time goes").  Only helpers whose result depends on their
arguments alone are replaced, each by a function that returns the same value for every argument
the original accepts and raises the same error for the rest:

* ``_get_np_dtype`` built a 20-entry dict of Triton to NumPy types on every call (about 7% of a
  softmax trace's CPU time); the table is built once here.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _fast_np_dtype(original):
    import triton.language as tl
    names = ("int1", "float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
             "int64", "uint64", "bfloat16", "float8e5", "float8e5b16", "float8e4nv", "float8e4b8", "float8e4b15")
    table = {getattr(tl, n): original(getattr(tl, n)) for n in names if hasattr(tl, n)}
    pointer = np.dtype(np.uint64)

    def get_np_dtype(tt_dtype: Any):
        if isinstance(tt_dtype, tl.pointer_type):
            return pointer
        if isinstance(tt_dtype, tl.block_type):
            element = tt_dtype.element_ty
            return pointer if isinstance(element, tl.pointer_type) else table[element]
        return table[tt_dtype]
    get_np_dtype._kf_fast = True
    return get_np_dtype


def install() -> None:
    """Replace the helpers (idempotent; the interpreter must be on)."""
    from triton.runtime import interpreter as interp
    if not getattr(interp._get_np_dtype, "_kf_fast", False):
        interp._get_np_dtype = _fast_np_dtype(interp._get_np_dtype)
