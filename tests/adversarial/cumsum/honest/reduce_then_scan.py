"""Reduce-then-scan over (row, block) programs: block sums, a per-row exclusive scan of the sums, then block scans plus offsets."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "BLOCK_P": [128], "num_warps": [4], "num_stages": [1]}


@triton.jit
def block_sums(x_ptr, sums_ptr, n_cols, n_blocks, stride_x, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    cols = blk * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(sums_ptr + row * n_blocks + blk, tl.sum(x, axis=0))


@triton.jit
def scan_sums(sums_ptr, offsets_ptr, n_blocks, BLOCK_P: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    p = tl.arange(0, BLOCK_P)
    carry = 0.0
    for start in range(0, n_blocks, BLOCK_P):
        mask = start + p < n_blocks
        s = tl.load(sums_ptr + row * n_blocks + start + p, mask=mask, other=0.0)
        inclusive = tl.cumsum(s, axis=0)
        tl.store(offsets_ptr + row * n_blocks + start + p, inclusive - s + carry, mask=mask)
        carry += tl.sum(s, axis=0)


@triton.jit
def scan_blocks(x_ptr, y_ptr, offsets_ptr, n_cols, n_blocks, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    cols = blk * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    offset = tl.load(offsets_ptr + row * n_blocks + blk)
    tl.store(y_ptr + row * stride_y + cols, (tl.cumsum(x, axis=0) + offset).to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, BLOCK_N, BLOCK_P, num_warps, num_stages):
    n_rows, n_cols = x.shape
    n_blocks = triton.cdiv(n_cols, BLOCK_N)
    y = torch.empty_like(x)
    sums = torch.empty((n_rows, n_blocks), device=x.device, dtype=torch.float32)
    offsets = torch.empty((n_rows, n_blocks), device=x.device, dtype=torch.float32)
    block_sums[(n_rows, n_blocks)](x, sums, n_cols, n_blocks, x.stride(0), BLOCK_N=BLOCK_N,
                                   num_warps=num_warps, num_stages=num_stages)
    scan_sums[(n_rows,)](sums, offsets, n_blocks, BLOCK_P=BLOCK_P, num_warps=num_warps, num_stages=num_stages)
    scan_blocks[(n_rows, n_blocks)](x, y, offsets, n_cols, n_blocks, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                                    num_warps=num_warps, num_stages=num_stages)
    return y
