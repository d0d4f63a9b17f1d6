"""Passes the static checks; skips the max subtraction, so large inputs overflow to inf/nan."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf"))
    e = tl.exp(x * 1000.0)
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK_N=BLOCK_N)
    return y
