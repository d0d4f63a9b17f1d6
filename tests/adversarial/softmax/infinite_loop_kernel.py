"""Passes the static checks; the kernel's loop never advances."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    start = 0
    while start < n_cols:
        start = start * 1
    cols = tl.arange(0, BLOCK_N)
    tl.store(y_ptr + row * n_cols + cols, tl.load(x_ptr + row * n_cols + cols), mask=cols < n_cols)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK_N=BLOCK_N)
    return y
