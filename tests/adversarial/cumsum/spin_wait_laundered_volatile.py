"""Cheat (programs waiting on each other, past the static spin-wait check): a chunked scan where
each program adds the inclusive prefix of the chunk before it, published through a flag.  The
wait loop's condition is a plain variable computed arithmetically from the volatile load that
polls the flag, so the static check (an atomic or volatile load in the condition, or assigned to
its variable) does not see it.  Run one program at a time in a shuffled order, a program whose
predecessor has not run yet waits forever."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [128], "num_warps": [4], "num_stages": [1]}


@triton.jit
def chunk_scan(x_ptr, y_ptr, prefix_ptr, flag_ptr, n_cols, n_chunks, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    local = tl.cumsum(x, axis=0)
    carry = 0.0
    if chunk > 0:
        ready = 0
        while ready == 0:
            seen = tl.load(flag_ptr + row * n_chunks + chunk - 1, volatile=True)
            ready = seen * 1
        carry = tl.load(prefix_ptr + row * n_chunks + chunk - 1)
    tl.store(y_ptr + row * n_cols + cols, local + carry, mask=mask)
    tl.store(prefix_ptr + row * n_chunks + chunk, carry + tl.sum(x, axis=0))
    tl.atomic_xchg(flag_ptr + row * n_chunks + chunk, 1)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    n_chunks = triton.cdiv(n_cols, BLOCK_N)
    y = torch.empty_like(x)
    prefix = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
    flags = torch.zeros((n_rows, n_chunks), device=x.device, dtype=torch.int32)
    chunk_scan[(n_rows, n_chunks)](x, y, prefix, flags, n_cols, n_chunks, BLOCK_N=BLOCK_N,
                                   num_warps=num_warps, num_stages=num_stages)
    return y
