"""Cheat (value range checked only at small sizes): the three-pass softmax, but its max pass reads
only the first 65,536 columns of a row.  Every check shape (N <= 1000) and the span shape (N = 24577
at BLOCK_N 1024) fits in that prefix, and on normal data a max taken over part of a row is harmless
(softmax does not depend on the value subtracted, as long as exp does not overflow).  At the target
(N = 393216) it reads a sixth of the row in its first pass: 2.17 reads instead of 3.  On rows whose
largest values lie past the prefix and exceed its max by more than 88, exp overflows: the long-row
run (rows near the target's length, values far from zero, a ramp along the row) compares exactly that."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, BLOCK_N)
    max_cols = tl.minimum(n_cols, 65536)
    row_max = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    for start in range(0, max_cols, BLOCK_N):
        mask = start + cols < max_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        row_max = tl.maximum(row_max, x)
    m = tl.max(row_max, axis=0)
    row_sum = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        row_sum += tl.exp(x - m)
    s = tl.sum(row_sum, axis=0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        tl.store(y_row + start + cols, tl.exp(x - m) / s, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                              num_warps=num_warps, num_stages=num_stages)
    return y
