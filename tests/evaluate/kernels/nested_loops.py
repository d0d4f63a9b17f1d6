"""Sum of 35 blocks of x (5 outer x 7 inner loop trips) plus a bias block re-read on every trip."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [32], "num_warps": [1], "num_stages": [1]}


@triton.jit
def nested_kernel(x_ptr, bias_ptr, y_ptr, OUTER: tl.constexpr, INNER: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(OUTER):
        for j in range(INNER):
            acc += tl.load(x_ptr + (i * INNER + j) * BLOCK + cols) + tl.load(bias_ptr + cols)
    tl.store(y_ptr + cols, acc)


def launch(x, bias, *, BLOCK, num_warps, num_stages):
    y = torch.empty((BLOCK,), dtype=x.dtype)
    nested_kernel[(1,)](x, bias, y, OUTER=5, INNER=7, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
