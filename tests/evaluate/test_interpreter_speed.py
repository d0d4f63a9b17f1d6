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
