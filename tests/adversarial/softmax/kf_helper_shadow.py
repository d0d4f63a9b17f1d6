"""Cheat (the trace's loop helper redefined): the verifier routes every kernel loop through a
helper; a module function of the same name, if it won, would decide which trips the trace sees
(here: only the first, so every loop looks one trip long)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


def _kf_for(iterable, loop):
    return iterable[:1]


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    m = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new)) + tl.where(x == float("-inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    mx = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - mx), axis=0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        tl.store(y_ptr + row * stride_y + start + cols, tl.exp(x - mx) / total, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                              num_warps=num_warps, num_stages=num_stages)
    return y
