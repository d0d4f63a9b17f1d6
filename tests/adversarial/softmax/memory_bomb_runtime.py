"""Passes the static checks (zeros is allowed for accumulators) but touches gigabytes."""
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
    scratch = [torch.zeros((1 << 27,), dtype=torch.float32, device=x.device) for _ in range(64)]
    return y
