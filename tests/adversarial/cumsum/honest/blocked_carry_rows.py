"""Blocked cumsum over [BLOCK_M, BLOCK_N] tiles: several rows per program, tl.cumsum along axis 1 plus a per-row carry vector."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [8], "BLOCK_N": [128, 512], "num_warps": [4], "num_stages": [1]}


@triton.jit
def cumsum_rows(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_x
    y_rows = y_ptr + rows.to(tl.int64)[:, None] * stride_y
    carry = tl.zeros([BLOCK_M], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = row_mask[:, None] & (start + cols[None, :] < n_cols)
        x = tl.load(x_rows + start + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        y = tl.cumsum(x, axis=1) + carry[:, None]
        tl.store(y_rows + start + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=1)


def launch(x, *, BLOCK_M, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    cumsum_rows[(triton.cdiv(n_rows, BLOCK_M),)](x, y, n_rows, n_cols, x.stride(0), y.stride(0),
                                                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                                 num_warps=num_warps, num_stages=num_stages)
    return y
