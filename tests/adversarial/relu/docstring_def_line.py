"""relu"""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [1024, 2048, 4096], "num_warps": [4, 8], "num_stages": [1]}


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    """
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) + tl.arange(0, BLOCK) * tl.num_programs(0)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)
    _ = """
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)  # """


def launch(x, *, BLOCK, num_warps, num_stages):
    y = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
