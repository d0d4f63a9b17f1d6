"""Cheat (work moved into programs the trace is unlikely to sample): every row is computed
exactly once, but the grid has only 5/8 as many programs as rows.  Program p computes row p;
one program in 64 (p % 64 == 7: never the first or the last, which the trace always samples)
also computes a share of the remaining 3/8 of the rows.  The trace samples the first, the last
and two random programs, almost surely all light ones, and scales one row per program to the
grid: the kernel is scored for 5/8 of its work.  On a GPU the heavy programs would straggle."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_row(x_ptr, y_ptr, row, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    m = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        m_new = tl.maximum(m, x)
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * alpha + tl.where(mask, tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        tl.store(y_ptr + row * stride_y + start + cols, tl.exp(x - row_max) / row_sum, mask=mask)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_light, per_heavy, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    softmax_row(x_ptr, y_ptr, pid, n_cols, stride_x, stride_y, BLOCK_N)
    if pid % 64 == 7:
        first = n_light + (pid // 64) * per_heavy
        for r in range(0, per_heavy):
            if first + r < n_rows:
                softmax_row(x_ptr, y_ptr, first + r, n_cols, stride_x, stride_y, BLOCK_N)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    n_light = n_rows - (3 * n_rows) // 8 if n_rows >= 64 else n_rows
    n_heavy = (n_light + 56) // 64
    per_heavy = triton.cdiv(n_rows - n_light, max(n_heavy, 1))
    y = torch.empty_like(x)
    softmax_kernel[(n_light,)](x, y, n_rows, n_light, per_heavy, n_cols, x.stride(0), y.stride(0),
                               BLOCK_N=BLOCK_N, num_warps=num_warps, num_stages=num_stages)
    return y
