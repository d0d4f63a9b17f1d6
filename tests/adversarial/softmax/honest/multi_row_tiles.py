"""Several rows per program: 2-D [BLOCK_M, BLOCK_N] tiles, online max/sum per row, then a normalising pass."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [4], "BLOCK_N": [256, 1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_rows(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    cols = tl.arange(0, BLOCK_N)
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_x
    y_rows = y_ptr + rows.to(tl.int64)[:, None] * stride_y
    m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_M], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = row_mask[:, None] & (start + cols[None, :] < n_cols)
        x = tl.load(x_rows + start + cols[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe[:, None]), axis=1)
        m = m_new
    inv = 1.0 / s
    for start in range(0, n_cols, BLOCK_N):
        mask = row_mask[:, None] & (start + cols[None, :] < n_cols)
        x = tl.load(x_rows + start + cols[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - m[:, None]) * inv[:, None]
        tl.store(y_rows + start + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, BLOCK_M, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_rows[(triton.cdiv(n_rows, BLOCK_M),)](x, y, n_rows, n_cols, x.stride(0), y.stride(0),
                                                  BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                                  num_warps=num_warps, num_stages=num_stages)
    return y
