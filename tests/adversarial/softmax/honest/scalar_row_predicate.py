"""Fixed-size grid of programs striding over rows; the row-in-range test (a scalar) is combined with the column mask."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "NUM_PROGRAMS": [132], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_strided_rows(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr,
                         NUM_PROGRAMS: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    rows_per_program = tl.cdiv(n_rows, NUM_PROGRAMS)
    for i in range(0, rows_per_program):
        row = i * NUM_PROGRAMS + tl.program_id(0)
        row_ok = row < n_rows
        m = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
        s = tl.zeros([BLOCK_N], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            mask = row_ok & (start + cols < n_cols)
            x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
            m_new = tl.maximum(m, x)
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)
            m = m_new
        row_max = tl.max(m, axis=0)
        row_max = tl.where(row_max == float("-inf"), 0.0, row_max)
        inv = 1.0 / tl.sum(s * tl.exp(m - row_max), axis=0)
        for start in range(0, n_cols, BLOCK_N):
            mask = row_ok & (start + cols < n_cols)
            x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
            tl.store(y_ptr + row * stride_y + start + cols, tl.exp(x - row_max) * inv, mask=mask)


def launch(x, *, BLOCK_N, NUM_PROGRAMS, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_strided_rows[(min(NUM_PROGRAMS, n_rows),)](x, y, n_rows, n_cols, x.stride(0), y.stride(0),
                                                       BLOCK_N=BLOCK_N, NUM_PROGRAMS=min(NUM_PROGRAMS, n_rows),
                                                       num_warps=num_warps, num_stages=num_stages)
    return y
