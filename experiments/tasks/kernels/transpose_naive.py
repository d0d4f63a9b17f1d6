"""Naive transpose (out = x.T, contiguous): one row segment per program.

Reads are contiguous, but each program writes its segment down a column of
the output with stride M, so the stores are uncoalesced.
"""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [64, 128], "num_warps": [4], "num_stages": [1]}


@triton.jit
def transpose_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(y_ptr + cols * n_rows + row, x, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty((n_cols, n_rows), device=x.device, dtype=x.dtype)
    grid = (n_rows, triton.cdiv(n_cols, BLOCK_N))
    transpose_kernel[grid](x, y, n_rows, n_cols, BLOCK_N=BLOCK_N, num_warps=num_warps, num_stages=num_stages)
    return y
