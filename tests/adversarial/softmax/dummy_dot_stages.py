"""Cheat (pipelining credit from a dummy dot): the model pipelines a loop over num_stages only
when the loop holds a tl.dot; other loops get the hardware's automatic buffering.  This online
softmax multiplies a 16x16 zero tile by itself once per trip of each loop and adds the (zero)
result into the running sum, so both loops count as dot loops and num_stages=4 overlaps their
memory latency.  The same kernel without the dot gets no such credit (its num_stages is ignored)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1, 4]}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    zero_tile = tl.zeros([16, 16], dtype=tl.float16)
    m = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        m_new = tl.maximum(m, x)
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * alpha + tl.where(mask, tl.exp(x - m_new), 0.0) + tl.sum(tl.dot(zero_tile, zero_tile))
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        y = tl.exp(x - row_max) / (row_sum + tl.sum(tl.dot(zero_tile, zero_tile)))
        tl.store(y_ptr + row * stride_y + start + cols, y, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                              num_warps=num_warps, num_stages=num_stages)
    return y
