"""Tolerance probe (the layernorm tolerance class): the variance as E[x^2] - E[x]^2 from one pass
of plain sums, which cancels catastrophically when the mean is large against the spread (the
'near_one' profile: mean 1, spread 0.01).  With the scale-aware tolerance this must either be
rejected by the correctness gate or, if it passes, do the same two reads as the Welford twin
and score within 10% of it."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [4096], "num_warps": [8], "num_stages": [1]}


@triton.jit
def layernorm_sums(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    cols = tl.arange(0, BLOCK)
    s1 = tl.zeros([BLOCK], dtype=tl.float32)
    s2 = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        s1 += x
        s2 += x * x
    mean = tl.sum(s1, axis=0) / n_cols
    var = tl.maximum(tl.sum(s2, axis=0) / n_cols - mean * mean, 0.0)
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + start + cols, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, weight, bias, *, BLOCK, num_warps, num_stages):
    n_rows = x.shape[0]
    n_cols = weight.numel()
    y = torch.empty_like(x)
    layernorm_sums[(n_rows,)](x, weight, bias, y, n_cols, 1e-5, BLOCK=BLOCK, num_warps=num_warps,
                              num_stages=num_stages)
    return y
