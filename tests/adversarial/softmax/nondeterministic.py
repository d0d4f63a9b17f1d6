"""Passes the static checks; the output depends on where the input happens to live in memory."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, jitter, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0) + jitter, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    y = torch.empty_like(x)
    jitter = (x.data_ptr() // 64 % 97) * 1e-9
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), jitter, BLOCK_N=BLOCK_N)
    return y
