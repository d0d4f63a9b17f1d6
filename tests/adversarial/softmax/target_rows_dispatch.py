"""Cheat (correct only where checked): an honest online softmax at every shape the verifier
runs for correctness, but when the grid has many rows (only the target shape has: the check
shapes have 7 and 64 rows, the span shape 3) launch switches to a one-pass kernel that stores
exp(x - 0) without the max/sum pass.  The output is wrong there, and nothing compares it."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_online(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
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
def softmax_one_pass(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        tl.store(y_ptr + row * stride_y + start + cols, tl.exp(x) / n_cols, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    if n_rows >= 512:
        softmax_one_pass[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                                    num_warps=num_warps, num_stages=num_stages)
    else:
        softmax_online[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                                  num_warps=num_warps, num_stages=num_stages)
    return y
