"""Honest twin of rare_heavy_passes.py: the naive LayerNorm seed over the last three dims, one
program per sample, three passes.

Passes: mean, variance (of x - mean), then normalise with weight and bias.
A whole sample is one program, so only B programs run.
"""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [4096, 2048], "num_warps": [4], "num_stages": [1]}


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        acc += tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
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
    layernorm_kernel[(n_rows,)](x, weight, bias, y, n_cols, 1e-5, BLOCK=BLOCK,
                                num_warps=num_warps, num_stages=num_stages)
    return y
