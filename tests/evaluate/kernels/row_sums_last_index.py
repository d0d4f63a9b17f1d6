"""Row sums that store with the loop's last index (a trace test kernel: with the loop cut to its first
trip, as in the census, the store falls outside the output)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [32]}


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_blocks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    last = 0
    for k in range(n_blocks):
        acc += tl.load(x_ptr + row * n_blocks * BLOCK + k * BLOCK + cols)
        last = k
    # at an offset of 0 only when the loop ran to its end
    tl.store(out_ptr + row * BLOCK + (n_blocks - 1 - last) * 100_000_000 + cols, acc)


def launch(x, *, BLOCK):
    out = torch.empty((x.shape[0], BLOCK), device=x.device, dtype=x.dtype)
    row_sum_kernel[(x.shape[0],)](x, out, x.shape[1] // BLOCK, BLOCK=BLOCK)
    return out
