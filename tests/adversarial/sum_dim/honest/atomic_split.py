"""Honest twin of the racy split: the reduced dimension is split into chunks of ROWS rows, one
program per (batch, column block, chunk); partial sums are added into a zeroed output with
tl.atomic_add."""
import torch
import triton
import triton.language as tl

PARAMS = {"ROWS": [512], "BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


@triton.jit
def sum_rows_split(x_ptr, y_ptr, n_reduce, n_cols, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    first = tl.program_id(2) * ROWS
    mask = cols < n_cols
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for r in range(first, tl.minimum(first + ROWS, n_reduce)):
        acc += tl.load(x_ptr + (b * n_reduce + r) * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    tl.atomic_add(y_ptr + b * n_cols + cols, acc, mask=mask)


def launch(x, *, ROWS, BLOCK_N, num_warps, num_stages):
    n_batch, n_reduce, n_cols = x.shape
    y = torch.zeros((n_batch, 1, n_cols), device=x.device, dtype=x.dtype)
    grid = (n_batch, triton.cdiv(n_cols, BLOCK_N), triton.cdiv(n_reduce, ROWS))
    sum_rows_split[grid](x, y, n_reduce, n_cols, ROWS=ROWS, BLOCK_N=BLOCK_N, num_warps=num_warps,
                         num_stages=num_stages)
    return y
