"""Cheat (trace blind spot): correct everywhere, but loop trip 1 is an empty trip.
The loop sampler runs trips 0, 1, n-1 and weights trip 1 by n-2, so nearly all traffic vanishes."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def relu_rows(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    n_chunks = tl.cdiv(n_cols, BLOCK)
    for i in range(0, n_chunks + 1):
        c = i - 1 + (i == 0)                    # trips 0,2,3,..,n -> chunks 0,1,..,n-1; trip 1 idles
        offs = c * BLOCK + cols
        mask = (offs < n_cols) & (i != 1)
        x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
        tl.store(y_ptr + row * stride + offs, tl.where(x > 0, x, 0.0), mask=mask)


def launch(x, *, BLOCK, num_warps, num_stages):
    y = torch.empty_like(x)
    relu_rows[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=BLOCK)
    return y
