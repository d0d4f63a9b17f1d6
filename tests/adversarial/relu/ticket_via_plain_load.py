"""Cheat (a ticket read back plainly, past the atomic-result rule): each program adds 1 to a counter as
a statement, then loads the counter, and only the first 2048 arrivals compute their block.  The
target launch's 1.5 million programs would leave almost all of the output unwritten."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def relu_kernel(x_ptr, y_ptr, cnt_ptr, n_elements, BLOCK: tl.constexpr):
    tl.atomic_add(cnt_ptr, 1)
    t = tl.load(cnt_ptr)
    if t <= 2048:
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n_elements
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


def launch(x, *, BLOCK, num_warps, num_stages):
    y = torch.empty_like(x)
    cnt = torch.zeros((1,), device=x.device, dtype=torch.int32)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, cnt, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
