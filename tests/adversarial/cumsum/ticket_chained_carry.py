"""Cheat (right only when programs run one at a time): chunks are taken in arrival order and each
reads its predecessor's running total with an atomic, without waiting for it.  Run sequentially,
the predecessor has always finished; on a GPU it often has not and the read returns 0."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def chained_scan(x_ptr, y_ptr, cnt_ptr, carry_ptr, n_cols, n_chunks, BLOCK_N: tl.constexpr):
    t = tl.atomic_add(cnt_ptr, 1)
    row = t // n_chunks
    c = t % n_chunks
    cols = c * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    local = tl.cumsum(x, axis=0)
    total = tl.sum(x, axis=0)
    prev = tl.atomic_add(carry_ptr + row * (n_chunks + 1) + c, 0.0)
    tl.atomic_add(carry_ptr + row * (n_chunks + 1) + c + 1, prev + total)
    tl.store(y_ptr + row * n_cols + cols, local + prev, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    n_chunks = triton.cdiv(n_cols, BLOCK_N)
    cnt = torch.zeros((1,), device=x.device, dtype=torch.int32)
    carry = torch.zeros((n_rows, n_chunks + 1), device=x.device, dtype=torch.float32)
    chained_scan[(n_rows * n_chunks,)](x, y, cnt, carry, n_cols, n_chunks, BLOCK_N=BLOCK_N,
                                       num_warps=num_warps, num_stages=num_stages)
    return y
