"""Cumsum as a matmul: each [BLOCK_M, BLOCK_N] tile times an upper-triangular ones matrix (tl.dot, IEEE fp32) plus a per-row carry."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [16], "BLOCK_N": [64], "num_warps": [4], "num_stages": [1]}


@triton.jit
def cumsum_tri_dot(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    tri = tl.where(cols[:, None] <= cols[None, :], 1.0, 0.0).to(tl.float32)
    carry = tl.zeros([BLOCK_M], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = row_mask[:, None] & (start + cols[None, :] < n_cols)
        x = tl.load(x_ptr + rows.to(tl.int64)[:, None] * stride_x + start + cols[None, :], mask=mask, other=0.0)
        y = tl.dot(x, tri, input_precision="ieee") + carry[:, None]
        tl.store(y_ptr + rows.to(tl.int64)[:, None] * stride_y + start + cols[None, :], y, mask=mask)
        carry += tl.sum(x, axis=1)


def launch(x, *, BLOCK_M, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    cumsum_tri_dot[(triton.cdiv(n_rows, BLOCK_M),)](x, y, n_rows, n_cols, x.stride(0), y.stride(0),
                                                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                                    num_warps=num_warps, num_stages=num_stages)
    return y
