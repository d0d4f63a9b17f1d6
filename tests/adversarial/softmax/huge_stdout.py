"""Passes the static checks (print is allowed) and floods stdout."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK_N: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    y = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), BLOCK_N),)](x, y, x.numel(), BLOCK_N=BLOCK_N)
    for i in range(10 ** 7):
        print("spam " * 200)
    return y
