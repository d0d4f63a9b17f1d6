"""Faster equivalents of pure helpers that Triton's interpreter calls for every block op.

The interpreter runs each program as Python over NumPy, so its per-op helpers are the verifier's
hot path (docs/verifier.md, "Where the time goes").  Only helpers whose result depends on their
arguments alone are replaced, each by a function that returns the same value for every argument
the original accepts and raises the same error for the rest:

* ``_get_np_dtype`` built a 20-entry dict of Triton to NumPy types on every call (about 7% of a
  softmax trace's CPU time); the table is built once here.
* ``broadcast_impl_value`` (the implicit broadcast of every binary op) builds the broadcast shape
  dimension by dimension and compares it with each operand's through Triton's own tuple type: about
  9 us a call, for blocks of one shape that it then returns unchanged.  Blocks of equal shape whose
  handles hold a scalar type are returned at once (about 2 us).  A scalar beside a block is splat as
  the original splats it, less the block type's ``to_ir`` (in the interpreter, an equal type built
  again, which ``create_splat`` reads only the shape of); blocks of other shapes go to the original.
* ``block_type.__init__`` and ``tensor.__init__`` run for every value an op makes (half a million
  times in a stream-K matmul's trace, a third of its CPU time): each unwraps and validates the shape
  and wraps it in Triton's ``tuple`` (its own type object per element).  For a shape already seen,
  the same wrapped shape, element count and shape text are reused: one dict look-up.  Those objects
  are never changed after construction (``tuple._setitem`` is the compiler's, not the
  interpreter's), so sharing them between values is invisible.  Shapes not made of plain ints, and
  the first sighting of each shape, go to the original, which validates them and raises as before.
* ``binary_op_type_checking_impl`` (the implicit promotion of every binary op) works out the common
  type and casts both operands to it.  For two tensors of the same non-pointer element type that type
  is the operands' own and both casts return their input, unless a division or modulo lifts a
  sub-32-bit float to fp32; a pointer plus an integer skips the promotion altogether.  Those cases
  go straight to the broadcast (about a tenth of a convolution chain's check time).  A tensor beside a
  Python int or float (``x * 2.0``, ``offs + 1``) takes the original's own steps, less its
  ``isinstance(numbers.Number)`` tests and the block's identity cast, when the computation type is the
  block's own (or a pointer plus an int); a number that makes the block cast, a bool, a NumPy scalar,
  and every other case go to the original.  No builder call is skipped: an identity cast makes
  none, so the trace's op counts and precision tags are the same.
* ``core._unwrap_if_constexpr`` runs on every argument of every builtin (400k calls in a convolution
  chain's check job) and tests for three container types before it looks for a ``constexpr``; a tensor,
  a plain number, a string or None is returned at once and an exact ``constexpr`` gives its value.
* ``_patch_attr`` binds each ``tl`` builtin to the interpreter's semantic for a launch through two
  wrappers per call (a keyword-copying lambda, then ``core.builtin``'s check that ``_semantic`` was
  given); :func:`_fast_patch_attr` binds it through one.
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


def _fast_broadcast(original, semantic=None):
    import triton.language as tl
    block_type = tl.block_type

    def splat(value: Any, like: Any) -> Any:
        # the original's ``like.with_element_ty(...)`` and ``create_splat(ty.to_ir(builder), ...)``: in the
        # interpreter ``to_ir`` only rebuilds an equal block type, and ``create_splat`` reads its shape
        ty = block_type(value.type.scalar, like.shape)
        return semantic.make_tensor(semantic.builder.create_splat(ty, value.handle), ty)

    def broadcast_impl_value(lhs: Any, rhs: Any) -> Any:
        lhs_ty, rhs_ty = lhs.type, rhs.type
        lhs_block, rhs_block = lhs_ty.is_block(), rhs_ty.is_block()
        if lhs_block and rhs_block:
            if (lhs_ty.shape == rhs_ty.shape and lhs.handle.dtype is lhs.handle.dtype.scalar
                    and rhs.handle.dtype is rhs.handle.dtype.scalar):
                return lhs, rhs
        elif semantic is not None and lhs_block:
            return lhs, splat(rhs, lhs_ty)
        elif semantic is not None and rhs_block:
            return splat(lhs, rhs_ty), rhs
        return original(lhs, rhs)
    broadcast_impl_value._kf_fast = True
    return broadcast_impl_value


_NUMBERS = (int, float)


def _fast_binary_checking(original, semantic):
    import triton.language as tl
    tensor = tl.tensor

    def binary_op_type_checking_impl(lhs: Any, rhs: Any, allow_lhs_ptr: bool = False, allow_rhs_ptr: bool = False,
                                     arithmetic_check: bool = True, div_or_mod: bool = False) -> Any:
        if type(lhs) is tensor and type(rhs) is tensor:
            lhs_ty, rhs_ty = lhs.dtype, rhs.dtype
            if lhs_ty is rhs_ty and not lhs_ty.is_ptr() and not (
                    div_or_mod and lhs_ty.is_floating() and lhs_ty.primitive_bitwidth < 32):
                return semantic.broadcast_impl_value(lhs, rhs)
            if (allow_lhs_ptr and lhs_ty.is_ptr() and rhs_ty.is_int()) or (
                    allow_rhs_ptr and rhs_ty.is_ptr() and lhs_ty.is_int()):
                return semantic.broadcast_impl_value(lhs, rhs)
        elif type(lhs) is tensor and type(rhs) in _NUMBERS:
            pair = _with_number(lhs, rhs, True, allow_lhs_ptr, arithmetic_check, div_or_mod)
            if pair is not None:
                return pair
        elif type(rhs) is tensor and type(lhs) in _NUMBERS:
            pair = _with_number(rhs, lhs, False, allow_rhs_ptr, arithmetic_check, div_or_mod)
            if pair is not None:
                return pair
        return original(lhs, rhs, allow_lhs_ptr, allow_rhs_ptr, arithmetic_check, div_or_mod)

    def _with_number(block: Any, number: Any, block_left: bool, allow_ptr: bool, arithmetic_check: bool,
                     div_or_mod: bool) -> Any:
        """A tensor beside a Python int or float, as the original makes it (None: leave it to the original)."""
        block_ty = block.dtype
        if block_ty.is_ptr():
            if not (allow_ptr and type(number) is int):
                return None
            constant = semantic.to_tensor(number)            # the original's pointer branch: the scalar as is
        else:
            if not arithmetic_check:
                return None
            number_ty = semantic.to_tensor_type(number)
            ret = (semantic.computation_type_impl(block_ty, False, number_ty, True, div_or_mod) if block_left
                   else semantic.computation_type_impl(number_ty, True, block_ty, False, div_or_mod))
            if ret != block_ty:                             # the block is cast: a builder call, the original's
                return None
            constant = semantic._cast_to_computation_type(number, ret)     # raises as the original does
        pair = (block, constant) if block_left else (constant, block)
        return semantic.broadcast_impl_value(*pair)
    binary_op_type_checking_impl._kf_fast = True
    return binary_op_type_checking_impl


def _fast_patch_attr(original):
    """Triton's ``_patch_attr`` (it binds every ``tl`` builtin to the interpreter's semantic for a launch)
    with a leaner binding: the original's lambda copies the keyword arguments without ``_semantic``
    and passes the interpreter's, then ``core.builtin``'s wrapper checks that ``_semantic`` is there
    and calls the function.  Here the interpreter's ``_semantic`` is set in the call's own (fresh)
    keyword dict, and a builtin wrapper is stepped over to the function it wraps: it can only pass."""
    import triton.language.core as core
    from triton.runtime import interpreter as interp
    wrapper_code = core.builtin(lambda: None).__code__

    def _patch_attr(obj: Any, name: str, member: Any, builder: Any, scope: Any) -> None:
        semantic = interp.interpreter_semantic
        target = member
        if getattr(member, "__code__", None) is wrapper_code and callable(getattr(member, "__wrapped__", None)):
            target = member.__wrapped__

        def new_member(*args: Any, **kwargs: Any) -> Any:
            kwargs["_semantic"] = semantic
            return target(*args, **kwargs)
        scope.set_attr(obj, name, new_member)
    _patch_attr._kf_fast = True
    return _patch_attr


def _plain_dims(shape: Any) -> tuple[int, ...] | None:
    """*shape* (a list or Triton tuple) as a tuple of ints, dims in a ``constexpr`` unwrapped as the
    original unwraps them; None when some dim is not an int."""
    key = tuple(shape)
    for d in key:
        if type(d) is not int:
            break
    else:
        return key
    import triton.language as tl
    dims = []
    for d in key:
        while type(d) is tl.constexpr:
            d = d.value
        if type(d) is not int:
            return None
        dims.append(d)
    return tuple(dims)


def _fast_block_type_init(original):
    import triton.language as tl
    seen: dict[tuple[int, ...], tuple[Any, Any, str]] = {}

    def __init__(self: Any, element_ty: Any, shape: Any) -> None:
        key = _plain_dims(shape) if type(shape) is list or type(shape) is tl.tuple else None
        hit = seen.get(key) if key is not None else None
        if hit is None:
            original(self, element_ty, shape)          # validates, raises as before
            if key is not None:
                seen[key] = (self.shape, self.numel, str(self.shape))
        else:
            self.element_ty = element_ty
            self.shape, self.numel, text = hit
            self.name = f"<{text}, {element_ty}>"
        self._kf_dims = key                             # read by the tensor constructor below
    __init__._kf_fast = True
    return __init__


def _fast_tensor_init(original):
    seen: dict[tuple[int, ...], tuple[Any, Any]] = {}

    def __init__(self: Any, handle: Any, type_: Any) -> None:
        if type_.is_block():
            key = getattr(type_, "_kf_dims", None)
        else:
            key = ()
        hit = seen.get(key) if key is not None else None
        if hit is None:
            original(self, handle, type_)
            if key is not None:
                seen[key] = (self.shape, self.numel)
            return
        self.handle = handle
        self.type = type_
        self.dtype = type_.scalar
        self.shape, self.numel = hit
    __init__._kf_fast = True
    return __init__


def _fast_unwrap(original):
    """``core._unwrap_if_constexpr`` (every builtin unwraps each argument: 400k calls in a convolution
    chain's check): a tensor, a plain number, a string or None is returned as is and a ``constexpr``
    gives its value, as the original does after its three container tests; containers and any other
    type go to the original."""
    import triton.language as tl
    plain = {tl.tensor, int, float, bool, str, type(None)}
    constexpr = tl.constexpr

    def _unwrap_if_constexpr(o: Any) -> Any:
        kind = type(o)
        if kind in plain:
            return o
        if kind is constexpr:
            return o.value
        return original(o)
    _unwrap_if_constexpr._kf_fast = True
    _unwrap_if_constexpr._kf_original = original
    return _unwrap_if_constexpr


def install() -> None:
    """Replace the helpers (idempotent; the interpreter must be on)."""
    from triton.runtime import interpreter as interp
    if not getattr(interp._get_np_dtype, "_kf_fast", False):
        interp._get_np_dtype = _fast_np_dtype(interp._get_np_dtype)
    semantic = interp.interpreter_semantic
    if not getattr(semantic.broadcast_impl_value, "_kf_fast", False):
        semantic.broadcast_impl_value = _fast_broadcast(semantic.broadcast_impl_value, semantic)
    if not getattr(semantic.binary_op_type_checking_impl, "_kf_fast", False):
        semantic.binary_op_type_checking_impl = _fast_binary_checking(semantic.binary_op_type_checking_impl, semantic)
    if not getattr(interp._patch_attr, "_kf_fast", False):
        interp._patch_attr = _fast_patch_attr(interp._patch_attr)
    import triton.language as tl
    import triton.language.core as core
    if not getattr(core._unwrap_if_constexpr, "_kf_fast", False):
        core._unwrap_if_constexpr = _fast_unwrap(core._unwrap_if_constexpr)
    for cls, fast in ((tl.block_type, _fast_block_type_init), (tl.tensor, _fast_tensor_init)):
        if not getattr(cls.__init__, "_kf_fast", False):
            cls.__init__ = fast(cls.__init__)
