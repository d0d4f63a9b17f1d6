"""Row sums: even rows load one block per trip, odd rows load all their blocks on one trip in 16
(a trace test kernel: a count taken from one program and applied to all would miss half the work)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [32]}


@triton.jit
def parity_kernel(x_ptr, out_ptr, n_blocks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    base = x_ptr + row * n_blocks * BLOCK
    for k in range(n_blocks):
        if row % 2 == 0:
            acc += tl.load(base + k * BLOCK + cols)
        elif k % 16 == 7:
            for j in range(16):
                acc += tl.load(base + (k - 7 + j) * BLOCK + cols)
    tl.store(out_ptr + row * BLOCK + cols, acc)


def launch(x, *, BLOCK):
    out = torch.empty((x.shape[0], BLOCK), device=x.device, dtype=x.dtype)
    parity_kernel[(x.shape[0],)](x, out, x.shape[1] // BLOCK, BLOCK=BLOCK)
    return out
