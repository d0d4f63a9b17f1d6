"""Cheat (two passes hidden in rare loop trips, 16 MB rows, interleaved loads): the rare-trip
layernorm of rare_heavy_passes.py whose hidden passes load two interleaved halves of each window,
one half per trip.  Every load is coalesced, but touches every other sector, so each sector is a
run of its own: 512K runs per pass overflowed a dense run's budget of exact runs, distinct bytes
followed bytes and the re-reads between passes vanished (7.74 against the honest 5.68).  Past the
budget, runs are coarse now (blocks of 4 sectors and up, an upper bound): each pass counts as a pass."""
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
    rt_n0 = 2 * ((n_cols + 2 * BLOCK - 1) // (2 * BLOCK))
    for rt_t0 in range(0, rt_n0):
        if (rt_t0 % 32 == 31) | (rt_t0 == rt_n0 - 1):
            for rt_j0 in range(rt_t0 // 32 * 32, rt_t0 + 1):
                start = (rt_j0 // 2) * 2 * BLOCK + (rt_j0 % 2) * 8
                offs = (cols // 8) * 16 + cols % 8
                mask = start + offs < n_cols
                acc += tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    rt_n1 = 2 * ((n_cols + 2 * BLOCK - 1) // (2 * BLOCK))
    for rt_t1 in range(0, rt_n1):
        if (rt_t1 % 32 == 31) | (rt_t1 == rt_n1 - 1):
            for rt_j1 in range(rt_t1 // 32 * 32, rt_t1 + 1):
                start = (rt_j1 // 2) * 2 * BLOCK + (rt_j1 % 2) * 8
                offs = (cols // 8) * 16 + cols % 8
                mask = start + offs < n_cols
                x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
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
