"""Cheat (a while loop instead of a for loop): the same column-block reduction with the row loop
written as `while r < n_reduce`.  While loops used to record no trips (x2.4 to x12.6); they now
run in full and count like for loops, so this must score within 10% of its for-loop twin."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


@triton.jit
def sum_rows(x_ptr, y_ptr, n_reduce, n_cols, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    r = 0
    while r < n_reduce:
        acc += tl.load(x_ptr + (b * n_reduce + r) * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        r += 1
    tl.store(y_ptr + b * n_cols + cols, acc.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_batch, n_reduce, n_cols = x.shape
    y = torch.empty((n_batch, 1, n_cols), device=x.device, dtype=x.dtype)
    sum_rows[(n_batch, triton.cdiv(n_cols, BLOCK_N))](x, y, n_reduce, n_cols, BLOCK_N=BLOCK_N,
                                                      num_warps=num_warps, num_stages=num_stages)
    return y
