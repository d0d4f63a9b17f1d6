"""Cheat (trace blind spot, work tickets): a work queue whose trips do their tile only when the ticket
follows the previous trip's by the program count, as every trip of a real run does.  A sampled loop
jumps between the trips it runs, so a trace that sampled the queue's trips would see idle trips."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [1024], "PROGRAMS": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def relu_queue(x_ptr, y_ptr, counter_ptr, n_elements, BLOCK: tl.constexpr):
    step = tl.num_programs(0)
    tile = tl.atomic_add(counter_ptr, 1)
    prev = tile - step
    while tile * BLOCK < n_elements:
        if tile - prev == step:
            offs = tile.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n_elements
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)
        prev = tile
        tile = tl.atomic_add(counter_ptr, 1)


def launch(x, *, BLOCK, PROGRAMS, num_warps, num_stages):
    y = torch.empty_like(x)
    n = x.numel()
    counter = torch.zeros((1,), device=x.device, dtype=torch.int32)
    relu_queue[(min(PROGRAMS, triton.cdiv(n, BLOCK)),)](x, y, counter, n, BLOCK=BLOCK, num_warps=num_warps,
                                                         num_stages=num_stages)
    return y
