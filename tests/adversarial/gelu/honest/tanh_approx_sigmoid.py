"""Tanh-approximation GELU written as x * sigmoid(2 * sqrt(2/pi) * (x + 0.044715 x^3)) with tl.sigmoid (no tanh call)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [2048], "num_warps": [8], "num_stages": [1]}


@triton.jit
def gelu_sigmoid_form(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, BLOCK, num_warps, num_stages):
    y = torch.empty_like(x)
    n = x.numel()
    gelu_sigmoid_form[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
