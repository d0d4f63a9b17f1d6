"""Example of the candidate format (docs/candidate_format.md) for the draft prompt: SiLU of a 2-D
tensor of any strides, a program per (row block, column block)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [8, 16], "BLOCK_N": [128, 256], "num_warps": [4], "num_stages": [1]}


@triton.jit
def silu_kernel(x_ptr, y_ptr, M, N, stride_xm, stride_xn, stride_ym, stride_yn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0)
    xf = x.to(tl.float32)
    y = xf / (1.0 + tl.exp(-xf))
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :] * stride_yn, y.to(x.dtype), mask=mask)


def launch(x, *, BLOCK_M, BLOCK_N, num_warps, num_stages):
    M, N = x.shape
    y = torch.empty_like(x)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    silu_kernel[grid](x, y, M, N, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                      BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=num_warps, num_stages=num_stages)
    return y
