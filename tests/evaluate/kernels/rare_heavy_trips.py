"""Row sums whose loads sit on one trip in 16 (a trace test kernel: sparse trip samples miss them)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [32]}


@triton.jit
def rare_kernel(x_ptr, out_ptr, n_blocks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(n_blocks):
        if k % 16 == 7:
            for j in range(16):
                acc += tl.load(x_ptr + row * n_blocks * BLOCK + (k - 7 + j) * BLOCK + cols)
    tl.store(out_ptr + row * BLOCK + cols, acc)


def launch(x, *, BLOCK):
    out = torch.empty((x.shape[0], BLOCK), device=x.device, dtype=x.dtype)
    rare_kernel[(x.shape[0],)](x, out, x.shape[1] // BLOCK, BLOCK=BLOCK)
    return out
