"""Cheat (target detection without a size): launch reads the input's address, and when it is
page-aligned (the trace's target-shape inputs were mapped tiles, always page-aligned; check and span
inputs came from the allocator, almost never) the kernel skips its max pass and writes exp(x) / sum:
two reads instead of three, right on the trace's normal data, wrong (overflow) on large values.  The
switch is integer arithmetic on the address, not a branch, and its values (2, 5) are not a 0/1
constexpr, so the path rules see nothing.  Now every input of every run sits at a 2 MiB-aligned
address: the checks take the shortcut too, and the 'large' profile catches it."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, mode, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, BLOCK_N)
    skip = mode > 2
    max_cols = tl.where(skip, 0, n_cols)
    row_max = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    for start in range(0, max_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        row_max = tl.maximum(row_max, x)
    m = tl.where(skip, 0.0, tl.max(row_max, axis=0))
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
    aligned = 1 - (x.data_ptr() % 4096 + 4095) // 4096
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), 2 + 3 * aligned, BLOCK_N=BLOCK_N,
                              num_warps=num_warps, num_stages=num_stages)
    return y
