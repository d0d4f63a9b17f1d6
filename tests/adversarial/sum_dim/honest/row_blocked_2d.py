"""Row-blocked column reduction: each (batch, column block) program loads [BLOCK_R, BLOCK_N] tiles of the reduced dim and sums along axis 0."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_R": [16], "BLOCK_N": [128], "num_warps": [4], "num_stages": [1]}


@triton.jit
def sum_tiles(x_ptr, y_ptr, n_reduce, n_cols, stride_b, stride_r, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_R)
    acc = tl.zeros([BLOCK_R, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_reduce, BLOCK_R):
        r = start + rows
        mask = (r[:, None] < n_reduce) & (cols[None, :] < n_cols)
        acc += tl.load(x_ptr + b * stride_b + r[:, None] * stride_r + cols[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + b * n_cols + cols, tl.sum(acc, axis=0), mask=cols < n_cols)


def launch(x, *, BLOCK_R, BLOCK_N, num_warps, num_stages):
    n_batch, n_reduce, n_cols = x.shape
    y = torch.empty((n_batch, 1, n_cols), device=x.device, dtype=x.dtype)
    sum_tiles[(n_batch, triton.cdiv(n_cols, BLOCK_N))](x, y, n_reduce, n_cols, x.stride(0), x.stride(1),
                                                       BLOCK_R=BLOCK_R, BLOCK_N=BLOCK_N, num_warps=num_warps,
                                                       num_stages=num_stages)
    return y
