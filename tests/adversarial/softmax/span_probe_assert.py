"""Cheat (span shape evaded): each block of a row is normalised on its own, which is right only
while a row fits one block (the check shapes have 129 and 1000 columns, BLOCK_N is 1024) and wrong
at the target shape (393216 columns).  The span-shape check would catch it, so launch refuses a
one-column input with an innocent-looking assert: the grid probe that sets each shape symbol to 1
fails, the column dimension is taken for a grid dimension, the span shape shrinks to the check
shapes' size and no span run is made."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_blockwise(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * stride_y + start + cols, e / tl.sum(e, axis=0), mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    assert n_cols >= 2, "softmax over a single column is the constant 1"
    y = torch.empty_like(x)
    softmax_blockwise[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                                 num_warps=num_warps, num_stages=num_stages)
    return y
