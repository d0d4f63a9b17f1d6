"""Persistent grid-stride GELU with 64-bit offsets (blk.to(tl.int64)): a fixed number of programs loop over blocks, tl.math.erf in fp32."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [1024], "NUM_PROGRAMS": [528], "num_warps": [4], "num_stages": [1]}


@triton.jit
def gelu_grid_stride(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n_progs = tl.num_programs(0)
    n_blocks = tl.cdiv(n_elements, BLOCK)
    for blk in range(pid, n_blocks, n_progs):
        offs = blk.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n_elements
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, BLOCK, NUM_PROGRAMS, num_warps, num_stages):
    y = torch.empty_like(x)
    n = x.numel()
    grid = (min(NUM_PROGRAMS, triton.cdiv(n, BLOCK)),)
    gelu_grid_stride[grid](x, y, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
