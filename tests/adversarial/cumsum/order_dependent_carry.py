"""Cheat (right only in launch order): a chunked scan where each program reads the carry-in from
the last output element of the previous chunk, written by another program.  Programs run in
launch order would see it written; on a GPU, or with the verifier's shuffled order, they often
read a chunk that is not done yet."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [64], "num_warps": [4], "num_stages": [1]}


@triton.jit
def chunk_scan(x_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(1)
    chunk = tl.program_id(0)
    cols = chunk * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    carry = 0.0
    if chunk > 0:
        carry = tl.load(y_ptr + row * n_cols + chunk * BLOCK_N - 1)
    tl.store(y_ptr + row * n_cols + cols, tl.cumsum(x, axis=0) + carry, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    chunk_scan[(triton.cdiv(n_cols, BLOCK_N), n_rows)](x, y, n_cols, BLOCK_N=BLOCK_N, num_warps=num_warps,
                                                       num_stages=num_stages)
    return y
