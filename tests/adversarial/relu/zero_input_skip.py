"""Cheat (trace blind spot): trace inputs are untouched torch.empty pages, i.e. all zeros.
Each row loads its first block; if it is all zero the rest of the row is skipped (data-dependent trip count)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def relu_rows(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row * stride + cols, tl.maximum(x, 0.0), mask=cols < n_cols)
    live = tl.max(tl.abs(x), axis=0) > 0
    end = tl.where(live, n_cols, 0)
    for start in range(BLOCK, end, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=0.0)
        tl.store(y_ptr + row * stride + offs, tl.maximum(x, 0.0), mask=offs < n_cols)


def launch(x, *, BLOCK, num_warps, num_stages):
    y = torch.empty_like(x)
    relu_rows[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=BLOCK)
    return y
