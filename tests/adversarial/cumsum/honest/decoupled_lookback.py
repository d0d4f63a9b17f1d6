"""Single-pass decoupled look-back scan: tiles take ids from an atomic counter, publish aggregate and flag, and read predecessors' state with atomics."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}

FLAG_AGGREGATE = tl.constexpr(1)
FLAG_PREFIX = tl.constexpr(2)


@triton.jit
def cumsum_lookback(x_ptr, y_ptr, aggr_ptr, incl_ptr, flag_ptr, counter_ptr, n_cols, n_blocks, stride_x, stride_y,
                    BLOCK_N: tl.constexpr):
    # tile ids in the order tiles start, so every predecessor a tile waits for is already running
    tile = tl.atomic_add(counter_ptr, 1)
    row = tile // n_blocks
    blk = tile % n_blocks
    state = row * n_blocks
    cols = blk * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row.to(tl.int64) * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    local = tl.cumsum(x, axis=0)
    aggregate = tl.sum(x, axis=0)
    exclusive = aggregate * 0.0
    if blk == 0:
        tl.store(incl_ptr + state + blk, aggregate)
        tl.atomic_xchg(flag_ptr + state + blk, FLAG_PREFIX, sem="release")
    else:
        tl.store(aggr_ptr + state + blk, aggregate)
        tl.atomic_xchg(flag_ptr + state + blk, FLAG_AGGREGATE, sem="release")
        j = blk - 1
        while j >= 0:
            flag = tl.atomic_add(flag_ptr + state + j, 0, sem="acquire")
            if flag == FLAG_PREFIX:
                exclusive += tl.load(incl_ptr + state + j, volatile=True)
                j = -1
            elif flag == FLAG_AGGREGATE:
                exclusive += tl.load(aggr_ptr + state + j, volatile=True)
                j -= 1
        tl.store(incl_ptr + state + blk, exclusive + aggregate)
        tl.atomic_xchg(flag_ptr + state + blk, FLAG_PREFIX, sem="release")
    tl.store(y_ptr + row.to(tl.int64) * stride_y + cols, (local + exclusive).to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    n_blocks = triton.cdiv(n_cols, BLOCK_N)
    y = torch.empty_like(x)
    aggr = torch.empty((n_rows * n_blocks,), device=x.device, dtype=torch.float32)
    incl = torch.empty((n_rows * n_blocks,), device=x.device, dtype=torch.float32)
    flags = torch.zeros((n_rows * n_blocks,), device=x.device, dtype=torch.int32)
    counter = torch.zeros((1,), device=x.device, dtype=torch.int32)
    cumsum_lookback[(n_rows * n_blocks,)](x, y, aggr, incl, flags, counter, n_cols, n_blocks, x.stride(0),
                                          y.stride(0), BLOCK_N=BLOCK_N, num_warps=num_warps, num_stages=num_stages)
    return y
