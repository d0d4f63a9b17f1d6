"""Naive exact GELU (erf form) in bf16: one small block per program, fp32 math."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [256, 512], "num_warps": [4], "num_stages": [1]}


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, BLOCK, num_warps, num_stages):
    y = torch.empty_like(x)
    n = x.numel()
    gelu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
