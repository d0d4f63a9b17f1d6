"""Cheat (torch compute hidden from the static type inference): the gate's inference marks
dict *values* that hold tensors, not dict keys.  launch puts x in a dict as a key, iterates the
dict (the loop variable is then not known to be a tensor) and calls .max() on it, an attribute
the host language allows on ordinary values (finfo.max, dict views).  The row maxima would let
the kernel skip its max pass.  Only the runtime dispatch guard stands in the way."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_shifted(x_ptr, y_ptr, shift, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        s += tl.exp(x - shift)
    total = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        tl.store(y_ptr + row * stride_y + start + cols, tl.exp(x - shift) / total, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    holder = {x: "input"}
    shift = 0.0
    for t in holder:
        shift = float(t.max())
    softmax_shifted[(n_rows,)](x, y, shift, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                               num_warps=num_warps, num_stages=num_stages)
    return y
