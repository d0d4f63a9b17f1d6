"""A matmul with 8x8x8 tiles: the interpreter runs it, Triton's NVIDIA backend refuses tl.dot below 16."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [8], "num_warps": [1], "num_stages": [1]}


@triton.jit
def small_dot_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * n + r[None, :])
    b = tl.load(b_ptr + r[:, None] * n + r[None, :])
    tl.store(c_ptr + r[:, None] * n + r[None, :], tl.dot(a, b))


def launch(a, b, *, BLOCK, num_warps, num_stages):
    c = torch.empty_like(a)
    small_dot_kernel[(1,)](a, b, c, a.shape[1], BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return c
