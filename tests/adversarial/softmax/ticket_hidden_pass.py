"""Cheat (a pass the trace never sees): the row-statistics launch gives its work to the last 1024
of 4096 arrivals (an atomic ticket).  The trace's sampled programs draw tickets below 300, so the
launch looks idle and a whole read of x goes unpriced (objective 1.07 against 0.71 for the honest
online softmax)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}
GRID1 = 4096
WORKERS = 1024


@triton.jit
def row_stats(x_ptr, cnt_ptr, m_ptr, s_ptr, n_rows, n_cols, stride_x,
              GRID: tl.constexpr, NW: tl.constexpr, BLOCK_N: tl.constexpr):
    t = tl.atomic_add(cnt_ptr, 1)
    cols = tl.arange(0, BLOCK_N)
    if t >= GRID - NW:
        w = t - (GRID - NW)
        for row in range(w, n_rows, NW):
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
            tl.store(m_ptr + row, row_max)
            tl.store(s_ptr + row, row_sum)


@triton.jit
def normalise(x_ptr, y_ptr, m_ptr, s_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    row_max = tl.load(m_ptr + row)
    row_sum = tl.load(s_ptr + row)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        tl.store(y_ptr + row * stride_y + start + cols, tl.exp(x - row_max) / row_sum, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    cnt = torch.zeros((1,), device=x.device, dtype=torch.int32)
    m = torch.empty((n_rows,), device=x.device, dtype=torch.float32)
    s = torch.empty((n_rows,), device=x.device, dtype=torch.float32)
    row_stats[(GRID1,)](x, cnt, m, s, n_rows, n_cols, x.stride(0), GRID=GRID1, NW=WORKERS,
                        BLOCK_N=BLOCK_N, num_warps=num_warps, num_stages=num_stages)
    normalise[(n_rows,)](x, y, m, s, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                         num_warps=num_warps, num_stages=num_stages)
    return y
