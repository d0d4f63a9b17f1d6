"""Naive inclusive cumsum along dim 1: one row per program, a sequential block scan.

Each block is scanned with tl.cumsum and offset by the running total of the
blocks before it.
"""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [64, 128], "num_warps": [4], "num_stages": [1]}


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    cols = tl.arange(0, BLOCK_N)
    carry = tl.zeros([1], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    cumsum_kernel[(n_rows,)](x, y, n_cols, BLOCK_N=BLOCK_N, num_warps=num_warps, num_stages=num_stages)
    return y
