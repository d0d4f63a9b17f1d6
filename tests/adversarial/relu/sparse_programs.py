"""Cheat (trace blind spot): 1 program in 64 does all the work (64 rows each); the others exit.
The trace runs the first, last and 2 seeded-random programs: they almost always land on idle ones."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [1024], "num_warps": [4], "num_stages": [1]}
GROUP = 64


@triton.jit
def relu_rows(x_ptr, y_ptr, n_rows, n_cols, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    n_mine = tl.where(pid % GROUP == 1, tl.minimum(n_rows - pid + 1, GROUP), 0)
    for r in range(0, n_mine):
        row = pid - 1 + r
        for start in range(0, n_cols, BLOCK):
            offs = start + cols
            mask = offs < n_cols
            x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
            tl.store(y_ptr + row * stride + offs, tl.maximum(x, 0.0), mask=mask)


def launch(x, *, BLOCK, num_warps, num_stages):
    y = torch.empty_like(x)
    n_rows = x.shape[0]
    grid = (triton.cdiv(n_rows, GROUP) * GROUP + 2,)
    relu_rows[grid](x, y, n_rows, x.shape[1], x.stride(0), BLOCK=BLOCK)
    return y
