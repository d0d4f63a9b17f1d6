"""Cheat (correct only where checked, per config): PARAMS has a flag FAST with the same block
size in every config.  FAST=0 (the default) is an honest online softmax and gets every check:
all value profiles and the span shape.  FAST=1 normalises each block on its own (right only
while a row fits one block); a non-default config is checked with the 'normal' profile at the
check shapes only, where rows fit one block, and gets no span run because its block size equals
the default's.  The model then picks FAST=1 as the best config."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "FAST": [0, 1], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr, FAST: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    if FAST:
        for start in range(0, n_cols, BLOCK_N):
            mask = start + cols < n_cols
            x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
            e = tl.exp(x - tl.max(x, axis=0))
            tl.store(y_ptr + row * stride_y + start + cols, e / tl.sum(e, axis=0), mask=mask)
    else:
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


def launch(x, *, BLOCK_N, FAST, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N, FAST=FAST,
                              num_warps=num_warps, num_stages=num_stages)
    return y
