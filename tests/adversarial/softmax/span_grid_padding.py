"""Cheat (span shape evaded): a per-block softmax (right only while a row fits one block) whose
grid is padded to at least 257 programs; the padding programs return at once.  At the span shape
(3 rows) the grid asks for more programs than the span run's budget of 256, so the span run is
skipped, not failed; at the check shapes the padding is harmless, and at the target shape (4096
rows) there is none."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_blockwise(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    if row < n_rows:
        cols = tl.arange(0, BLOCK_N)
        for start in range(0, n_cols, BLOCK_N):
            mask = start + cols < n_cols
            x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
            e = tl.exp(x - tl.max(x, axis=0))
            tl.store(y_ptr + row * stride_y + start + cols, e / tl.sum(e, axis=0), mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    grid = (max(n_rows, 257),)
    softmax_blockwise[grid](x, y, n_rows, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                            num_warps=num_warps, num_stages=num_stages)
    return y
