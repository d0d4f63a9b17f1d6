"""Cheat (long-row shape shortened by a padded grid): prefix_max_long_rows.py, whose max pass reads
only the first 65,536 columns of a row, with its grid padded to at least 4,097 programs (the padding
programs return at once).  The grid probe then counts 4,097 programs at every shape; a long-row shape
sized by that count would shrink its rows below the prefix and never see the overflow.  The long-row
shape counts only the programs the grid's tiles account for."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    if row < n_rows:
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
    softmax_kernel[(max(n_rows, 4097),)](x, y, n_rows, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                                         num_warps=num_warps, num_stages=num_stages)
    return y
