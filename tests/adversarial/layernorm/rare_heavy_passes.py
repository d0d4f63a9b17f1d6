"""Cheat (two passes hidden in rare loop trips, 16 MB rows): the naive layernorm whose mean and
variance passes do their work only on every 32nd trip, which then re-reads its group's 32 blocks
(the redteam transform rare_heavy_trips).  The real work is the honest kernel's: three reads and
one write of every row.  While a dense run recorded single sectors, a row of 512K sectors
overflowed its budget, distinct bytes followed bytes and the re-reads between passes vanished:
7.74 against the honest 5.68.  Dense runs now record sector runs, so every trip of the lead fits
and each pass is counted as a pass."""
import torch
import triton
import triton.language as tl
PARAMS = {'BLOCK': [4096, 2048], 'num_warps': [4], 'num_stages': [1]}

@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    rt_n0 = (n_cols - 0 + BLOCK - 1) // BLOCK
    for rt_t0 in range(0, rt_n0):
        if (rt_t0 % 32 == 31) | (rt_t0 == rt_n0 - 1):
            for rt_j0 in range(rt_t0 // 32 * 32, rt_t0 + 1):
                start = 0 + rt_j0 * BLOCK
                mask = start + cols < n_cols
                acc += tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    rt_n1 = (n_cols - 0 + BLOCK - 1) // BLOCK
    for rt_t1 in range(0, rt_n1):
        if (rt_t1 % 32 == 31) | (rt_t1 == rt_n1 - 1):
            for rt_j1 in range(rt_t1 // 32 * 32, rt_t1 + 1):
                start = 0 + rt_j1 * BLOCK
                mask = start + cols < n_cols
                x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
                d = tl.where(mask, x - mean, 0.0)
                acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)

def launch(x, weight, bias, *, BLOCK, num_warps, num_stages):
    n_rows = x.shape[0]
    n_cols = weight.numel()
    y = torch.empty_like(x)
    layernorm_kernel[n_rows,](x, weight, bias, y, n_cols, 1e-05, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
