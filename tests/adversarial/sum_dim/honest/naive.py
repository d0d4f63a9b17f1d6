"""Naive sum over dim 1 of a (B, R, N) tensor: one program per output element.

Each program walks its column with stride N, so every load is uncoalesced.
"""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_R": [64, 128], "num_warps": [4], "num_stages": [1]}


@triton.jit
def sum_dim1_kernel(x_ptr, y_ptr, n_reduce, n_cols, BLOCK_R: tl.constexpr):
    pid = tl.program_id(0)
    b = pid // n_cols
    col = pid % n_cols
    base = x_ptr + b * n_reduce * n_cols + col
    rows = tl.arange(0, BLOCK_R)
    acc = tl.zeros([BLOCK_R], dtype=tl.float32)
    for start in range(0, n_reduce, BLOCK_R):
        mask = start + rows < n_reduce
        acc += tl.load(base + (start + rows) * n_cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + pid, tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty))


def launch(x, *, BLOCK_R, num_warps, num_stages):
    n_batch, n_reduce, n_cols = x.shape
    y = torch.empty((n_batch, 1, n_cols), device=x.device, dtype=x.dtype)
    sum_dim1_kernel[(n_batch * n_cols,)](x, y, n_reduce, n_cols, BLOCK_R=BLOCK_R,
                                         num_warps=num_warps, num_stages=num_stages)
    return y
