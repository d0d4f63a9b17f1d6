"""LayerNorm in the style of Liger-Kernel 0.5.2's forward (one program per row, whole row in registers).

Follows the published algorithm (experiments/fidelity/README.md): grid (M,), BLOCK_SIZE =
next_power_of_2(N), no loop; x, w, b loaded once; mean = sum(x) / N, var = sum((x - mean)^2) / N
from registers; rstd = rsqrt(var + eps); mean and rstd stored to [M] caches; y = (x - mean) *
rstd * w + b written once, all in the input dtype (fp32).  Masked lanes are kept out of the
variance (Liger's own kernel relies on N being a power of two there).  num_warps is a PARAMS
hint; the dataset names the value of Liger's rule (4 / 8 / 16 / 32) at each shape.
"""
import torch
import triton
import triton.language as tl

PARAMS = {"num_warps": [4, 8, 16, 32], "num_stages": [1]}


@triton.jit
def layer_norm_row_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, n_cols, stride_x, stride_y, eps,
                          BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * stride_y + cols, diff * rstd * w + b, mask=mask)


def launch(x, w, b, *, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
    rstd = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
    block = triton.next_power_of_2(n_cols)
    layer_norm_row_kernel[(n_rows,)](x, w, b, y, mean, rstd, n_cols, x.stride(0), y.stride(0), 1e-6,
                                     BLOCK_SIZE=block, num_warps=num_warps, num_stages=num_stages)
    return y, mean, rstd
