"""RMSNorm in the style of Liger-Kernel 0.5.2's forward (one program per row, whole row in registers).

Follows the published algorithm (experiments/fidelity/README.md): grid (M,), BLOCK_SIZE =
next_power_of_2(H) with no loop over the row, x upcast to fp32, rstd = rsqrt(mean(x^2) + eps)
stored to an fp32 [M] cache, y = bf16(x * rstd) * w in fp32, stored in x's dtype.  One read of
x and w, one write of y.  Liger picks num_warps from BLOCK_SIZE (4 / 8 / 16 / 32 for < 2048 /
< 8192 / < 32768 / otherwise); here num_warps is a PARAMS hint and the fidelity dataset names
the value that rule gives at each measured shape.
"""
import torch
import triton
import triton.language as tl

PARAMS = {"num_warps": [4, 8, 16, 32], "num_stages": [1]}


@triton.jit
def rms_norm_row_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, n_cols, stride_x, stride_y, eps,
                        BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    xf = x.to(tl.float32)
    mean_sq = tl.sum(xf * xf, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(mean_sq + eps)
    tl.store(rstd_ptr + row, rstd)
    normed = (xf * rstd).to(x.dtype)
    y = normed.to(tl.float32) * w.to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, w, *, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty((n_rows,), device=x.device, dtype=torch.float32)
    block = triton.next_power_of_2(n_cols)
    rms_norm_row_kernel[(n_rows,)](x, w, y, rstd, n_cols, x.stride(0), y.stride(0), 1e-6,
                                   BLOCK_SIZE=block, num_warps=num_warps, num_stages=num_stages)
    return y, rstd
