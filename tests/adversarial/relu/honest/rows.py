"""Honest twin of the row-loop cheats: one row per program, every chunk of the row loaded and stored."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def relu_rows(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
        tl.store(y_ptr + row * stride + offs, tl.where(x > 0, x, 0.0), mask=mask)


def launch(x, *, BLOCK, num_warps, num_stages):
    y = torch.empty_like(x)
    relu_rows[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=BLOCK)
    return y
