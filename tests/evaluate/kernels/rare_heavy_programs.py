"""Row sums over 5/8 of the grid: program p sums row p, and one program in 64 also sums a share of
the remaining 3/8 of the rows (a trace test kernel: the traced programs are light ones)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [32]}


@triton.jit
def row_sum(x_ptr, out_ptr, row, n_blocks, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(n_blocks):
        acc += tl.load(x_ptr + row * n_blocks * BLOCK + k * BLOCK + cols)
    tl.store(out_ptr + row * BLOCK + cols, acc)


@triton.jit
def dodging_kernel(x_ptr, out_ptr, n_blocks, light, per_heavy, total, BLOCK: tl.constexpr):
    p = tl.program_id(0)
    row_sum(x_ptr, out_ptr, p, n_blocks, BLOCK)
    if p % 64 == 7:
        for r in range(per_heavy):
            q = light + (p // 64) * per_heavy + r
            if q < total:
                row_sum(x_ptr, out_ptr, q, n_blocks, BLOCK)


def launch(x, *, BLOCK):
    rows = x.shape[0]
    out = torch.empty((rows, BLOCK), device=x.device, dtype=x.dtype)
    light = rows - (3 * rows) // 8
    per_heavy = triton.cdiv(rows - light, (light + 56) // 64)
    dodging_kernel[(light,)](x, out, x.shape[1] // BLOCK, light, per_heavy, rows, BLOCK=BLOCK)
    return out
