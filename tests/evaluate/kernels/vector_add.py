"""Vector add: one BLOCK of elements per program, masked tail."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [256, 1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def launch(a, b, *, BLOCK, num_warps, num_stages):
    out = torch.empty_like(a)
    n = a.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return out
