"""Chained scan without a ticket: tile (row, blk) = program id; each tile publishes its inclusive prefix and a flag with atomic_xchg and polls its predecessor's flag."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def cumsum_chained(x_ptr, y_ptr, incl_ptr, flag_ptr, n_cols, n_blocks, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    blk = tl.program_id(1)
    state = row * n_blocks
    cols = blk * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row.to(tl.int64) * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    local = tl.cumsum(x, axis=0)
    exclusive = tl.sum(x, axis=0) * 0.0
    if blk > 0:
        while tl.atomic_max(flag_ptr + state + blk - 1, 0, sem="acquire") == 0:
            pass
        exclusive = tl.load(incl_ptr + state + blk - 1, volatile=True)
    tl.atomic_xchg(incl_ptr + state + blk, exclusive + tl.sum(x, axis=0), sem="relaxed")
    tl.atomic_xchg(flag_ptr + state + blk, 1, sem="release")
    tl.store(y_ptr + row.to(tl.int64) * stride_y + cols, (local + exclusive).to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    n_blocks = triton.cdiv(n_cols, BLOCK_N)
    y = torch.empty_like(x)
    incl = torch.empty((n_rows * n_blocks,), device=x.device, dtype=torch.float32)
    flags = torch.zeros((n_rows * n_blocks,), device=x.device, dtype=torch.int32)
    cumsum_chained[(n_rows, n_blocks)](x, y, incl, flags, n_cols, n_blocks, x.stride(0), y.stride(0),
                                       BLOCK_N=BLOCK_N, num_warps=num_warps, num_stages=num_stages)
    return y
