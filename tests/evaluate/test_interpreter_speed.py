"""The interpreter's helpers replaced for speed return what the originals return (interpreter_speed.py)."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.runtime import interpreter as interp  # noqa: E402

from kernelfoundry.evaluate.child import interpreter_speed  # noqa: E402


@triton.jit
def _mixed(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + rows)                       # (BLOCK,)
    y = tl.load(y_ptr + rows)
    same = x * y + x                                # equal shapes
    scalar = same * 3.0 - 1                         # block and scalar
    col = scalar[:, None]                           # (BLOCK, 1) against (1, BLOCK): a real broadcast
    grid = col + y[None, :]
    mixed = grid + (rows[:, None] * BLOCK + rows[None, :]).to(tl.float32)   # int block cast to float
    tl.store(out_ptr + rows[:, None] * BLOCK + rows[None, :], mixed)


def _run(fast: bool, monkeypatch) -> tuple[np.ndarray, int]:
    """The kernel's output, and how many times Triton's own broadcast ran on blocks of one shape."""
    semantic = interp.interpreter_semantic
    plain = type(semantic).broadcast_impl_value.__get__(semantic)
    calls = []

    def original(lhs, rhs):
        if lhs.type.is_block() and rhs.type.is_block() and lhs.type.shape == rhs.type.shape:
            calls.append(1)
        return plain(lhs, rhs)
    monkeypatch.setattr(semantic, "broadcast_impl_value",
                        interpreter_speed._fast_broadcast(original) if fast else original)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(16, generator=g), torch.randn(16, generator=g)
    out = torch.empty(16, 16)
    _mixed[(1,)](x, y, out, BLOCK=16)
    return out.numpy().copy(), len(calls)


def test_blocks_of_one_shape_skip_the_generic_broadcast_and_every_result_is_the_same(monkeypatch):
    slow, slow_broadcasts = _run(False, monkeypatch)
    fast, fast_broadcasts = _run(True, monkeypatch)
    assert np.array_equal(slow, fast)
    assert fast.dtype == slow.dtype == np.float32
    # blocks of one shape never reach Triton's own broadcast on the fast path
    assert slow_broadcasts >= 3 and fast_broadcasts == 0


def test_the_fast_broadcast_returns_equal_shaped_operands_themselves():
    semantic = interp.interpreter_semantic
    original = type(semantic).broadcast_impl_value.__get__(semantic)
    fast = interpreter_speed._fast_broadcast(original)
    handle = interp.TensorHandle(np.arange(4, dtype=np.float32), tl.float32)
    handle.kf_src = 3                                    # a loaded-precision tag stays where it was
    a = tl.tensor(handle, tl.block_type(tl.float32, [4]))
    b = tl.tensor(interp.TensorHandle(np.ones(4, dtype=np.float32), tl.float32), tl.block_type(tl.float32, [4]))
    left, right = fast(a, b)
    assert left is a and right is b and left.handle.kf_src == 3
    wide = tl.tensor(interp.TensorHandle(np.ones((2, 4), dtype=np.float32), tl.float32),
                     tl.block_type(tl.float32, [2, 4]))
    left, right = fast(a, wide)                          # different shapes: Triton's own broadcast
    assert left is not a and list(left.type.shape) == [2, 4] and right is wide


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "int1", "int64", "uint8"])
def test_the_dtype_table_matches_the_original(name):
    original = interp._get_np_dtype
    fast = interpreter_speed._fast_np_dtype(original)
    dtype = getattr(tl, name)
    assert fast(dtype) == original(dtype)
    assert fast(tl.block_type(dtype, [4])) == original(tl.block_type(dtype, [4]))
    assert fast(tl.pointer_type(dtype)) == np.dtype(np.uint64)


def _block_state(t) -> tuple:
    return (t.element_ty, [int(d) for d in t.shape], t.numel, t.name)


def _tensor_state(t) -> tuple:
    return (t.handle, t.type, t.dtype, [d.value for d in t.shape], t.numel.value, type(t.shape), type(t.numel))


@pytest.mark.parametrize("shape", [[16], [4, 32], [tl.constexpr(8), 2], "tuple", [1, 1, 64]])
def test_cached_block_types_and_tensors_have_the_originals_state(shape):
    if shape == "tuple":
        shape = tl.tuple([2, 8])
    original_block, original_tensor = tl.block_type.__init__, tl.tensor.__init__
    if getattr(original_block, "_kf_fast", False):
        pytest.skip("the fast constructors are installed in this process")
    fast_block = interpreter_speed._fast_block_type_init(original_block)
    fast_tensor = interpreter_speed._fast_tensor_init(original_tensor)
    handle = interp.TensorHandle(np.zeros(4, dtype=np.float32), tl.float32)
    for element in (tl.float32, tl.pointer_type(tl.float16), tl.int1):
        slow = tl.block_type.__new__(tl.block_type)
        original_block(slow, element, shape)
        shapes = []
        for _ in range(2):                                   # the first call fills the cache, the second hits it
            fast = tl.block_type.__new__(tl.block_type)
            fast_block(fast, element, shape)
            assert _block_state(fast) == _block_state(slow)
            assert fast == slow
            shapes.append(fast.shape)
            for ty in (fast, element):                       # a block and a scalar value
                want = tl.tensor.__new__(tl.tensor)
                original_tensor(want, handle, ty)
                got = tl.tensor.__new__(tl.tensor)
                fast_tensor(got, handle, ty)
                assert _tensor_state(got) == _tensor_state(want)
        assert shapes[0] is shapes[1]                        # the second came from the cache


@pytest.mark.parametrize("shape, error", [([3], ValueError), ([], TypeError), ((4,), AssertionError),
                                          ([4.0], TypeError), ([True, 4], None)])
def test_cached_block_types_refuse_what_the_original_refuses(shape, error):
    original = tl.block_type.__init__
    if getattr(original, "_kf_fast", False):
        pytest.skip("the fast constructors are installed in this process")
    fast = interpreter_speed._fast_block_type_init(original)
    for _ in range(2):
        if error is None:                                     # a bool dim: whatever the original makes of it
            want = tl.block_type.__new__(tl.block_type)
            original(want, tl.float32, shape)
            got = tl.block_type.__new__(tl.block_type)
            fast(got, tl.float32, shape)
            assert _block_state(got) == _block_state(want) and got._kf_dims is None
            continue
        with pytest.raises(error):
            original(tl.block_type.__new__(tl.block_type), tl.float32, shape)
        with pytest.raises(error):
            fast(tl.block_type.__new__(tl.block_type), tl.float32, shape)


def test_a_kernel_gives_the_same_output_with_the_cached_constructors(monkeypatch):
    if getattr(tl.block_type.__init__, "_kf_fast", False):
        pytest.skip("the fast constructors are installed in this process")
    slow, _ = _run(False, monkeypatch)
    monkeypatch.setattr(tl.block_type, "__init__", interpreter_speed._fast_block_type_init(tl.block_type.__init__))
    monkeypatch.setattr(tl.tensor, "__init__", interpreter_speed._fast_tensor_init(tl.tensor.__init__))
    fast, _ = _run(False, monkeypatch)
    again, _ = _run(False, monkeypatch)
    assert np.array_equal(slow, fast) and np.array_equal(slow, again)


_DTYPES = ("int1", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
           "float32", "float64", "float8e5", "float8e4nv")
_FLAGS = [dict(allow_lhs_ptr=lp, allow_rhs_ptr=rp, arithmetic_check=ac, div_or_mod=dm)
          for lp in (False, True) for rp in (False, True) for ac in (False, True) for dm in (False, True)]


def _operand(name: str, shape: tuple[int, ...]) -> tl.tensor:
    """A tensor of Triton type *name* (``ptr_<name>`` for a pointer) holding zeros of *shape* (``()``: a scalar)."""
    element = tl.pointer_type(getattr(tl, name[4:])) if name.startswith("ptr_") else getattr(tl, name)
    data = np.zeros(shape or (1,), dtype=interp._get_np_dtype(element))
    handle = interp.TensorHandle(data, element)
    return tl.tensor(handle, tl.block_type(element, list(shape)) if shape else element)


def _outcome(check, lhs, rhs, flags, values=False):
    """What *check* makes of the operands; with *values*, also their dtypes, values and the error text (a
    number becomes a constant of the computation type)."""
    try:
        a, b = check(lhs, rhs, **flags)
    except Exception as exc:    # the fast path must raise what the original raises
        return ("raised", type(exc).__name__) + ((str(exc),) if values else ())
    seen = ("ok", str(a.type), str(b.type), a.handle.data.shape, b.handle.data.shape, a is lhs, b is rhs)
    return seen + ((a.handle.data.dtype, b.handle.data.dtype, a.handle.data.tolist(), b.handle.data.tolist())
                   if values else ())


@pytest.mark.parametrize("shapes", [((), ()), ((8,), (8,)), ((8,), ()), ((), (4, 8)), ((4, 1), (1, 8))])
def test_the_fast_type_check_gives_the_original_result_for_every_dtype_pair_and_flag(shapes):
    semantic = interp.interpreter_semantic
    original = type(semantic).binary_op_type_checking_impl.__get__(semantic)
    fast = interpreter_speed._fast_binary_checking(original, semantic)
    names = list(_DTYPES) + ["ptr_float32", "ptr_float16"]
    compared = shortcut = 0
    for left in names:
        for right in names:
            lhs, rhs = _operand(left, shapes[0]), _operand(right, shapes[1])
            for flags in _FLAGS:
                expected = _outcome(original, lhs, rhs, flags)
                assert _outcome(fast, lhs, rhs, flags) == expected, (left, right, flags)
                compared += 1
                shortcut += expected[0] == "ok" and (lhs.dtype is rhs.dtype or "ptr" in left + right)
    assert compared == len(names) ** 2 * len(_FLAGS) and shortcut > 100


@pytest.mark.parametrize("shape", [(), (8,), (2, 4)])
def test_a_python_number_beside_a_tensor_gives_the_original_result(shape):
    semantic = interp.interpreter_semantic
    original = type(semantic).binary_op_type_checking_impl.__get__(semantic)
    calls = []

    def recording(*args):
        calls.append(args)
        return original(*args)
    fast = interpreter_speed._fast_binary_checking(recording, semantic)
    numbers = (0, 2, -3, 2 ** 31, -2 ** 40, 2 ** 63, 2.5, -1.0, 1e300, float("inf"), True)
    compared = 0
    for name in list(_DTYPES) + ["ptr_float32"]:
        block = _operand(name, shape)
        for number in numbers:
            for flags in _FLAGS:
                for pair in ((block, number), (number, block)):
                    assert _outcome(fast, *pair, flags, values=True) == _outcome(original, *pair, flags, values=True), \
                        (name, number, flags, pair[0] is block)
                    compared += 1
    fast_share = 1 - len(calls) / compared
    assert fast_share > 0.2     # ints and floats of the block's kind skip the original; bools and casts do not
    with pytest.raises(TypeError, match="cannot convert"):     # a NumPy scalar: refused, as the original does
        fast(_operand("float32", (8,)), np.float32(2.5))


@pytest.mark.parametrize("shapes", [((8,), ()), ((), (4, 8)), ((2, 1, 4), ())])
def test_a_scalar_beside_a_block_is_splat_as_the_original_splats_it(shapes):
    semantic = interp.interpreter_semantic
    plain = type(semantic).broadcast_impl_value.__get__(semantic)
    fast = interpreter_speed._fast_broadcast(plain, semantic)
    for left in _DTYPES + ("ptr_float32",):
        for right in _DTYPES:
            lhs, rhs = _operand(left, shapes[0]), _operand(right, shapes[1])
            lhs.handle.data[...] = 1
            rhs.handle.data[...] = 1
            want, got = plain(lhs, rhs), fast(lhs, rhs)
            for w, g in zip(want, got):
                assert str(w.type) == str(g.type) and w.type == g.type, (left, right)
                assert w.handle.dtype == g.handle.dtype and w.handle.data.dtype == g.handle.data.dtype
                assert np.array_equal(w.handle.data, g.handle.data), (left, right)
            assert got[0] is lhs if shapes[0] else got[1] is rhs       # the block itself is not copied


@triton.jit
def _builtins(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = tl.where(x > 0, tl.exp(x), tl.math.rsqrt(tl.abs(x) + 1.0))
    total = tl.sum(y, axis=0) + tl.max(tl.cumsum(x, axis=0), axis=0)
    tl.store(out_ptr + offs, y * total + tl.minimum(x, 0.5).to(tl.float32), mask=offs < n)


def test_builtins_bound_through_the_lean_patch_compute_what_the_original_binding_computes(monkeypatch):
    original = interp._patch_attr
    if getattr(original, "_kf_fast", False):
        pytest.skip("the lean binding is installed in this process")
    x = torch.randn(100, generator=torch.Generator().manual_seed(1))
    outs = []
    for patch in (original, interpreter_speed._fast_patch_attr(original)):
        monkeypatch.setattr(interp, "_patch_attr", patch)
        out = torch.empty(100)
        _builtins[(1,)](x, out, 100, BLOCK=128)
        outs.append(out.numpy().copy())
    assert np.array_equal(outs[0], outs[1]) and np.isfinite(outs[0]).all()
    assert tl.core.is_builtin(tl.where) and tl.core.is_builtin(tl.math.rsqrt)   # the launch's bindings are undone


def test_the_fast_unwrap_returns_what_the_original_returns():
    import triton.language.core as core
    original = getattr(core._unwrap_if_constexpr, "_kf_original", core._unwrap_if_constexpr)   # install() may have run
    fast = interpreter_speed._fast_unwrap(original)
    block = _operand("float32", (8,))
    values = [block, 3, -1.5, True, None, "x", tl.constexpr(4), tl.constexpr(None), tl.constexpr(block),
              tl.float32, [tl.constexpr(2), 3], (tl.constexpr(1), (tl.constexpr(2),)), np.int64(5)]
    for value in values:
        got, expected = fast(value), original(value)
        assert type(got) is type(expected) and (got is expected or got == expected), value
