"""Honest twin of rare_heavy_trips.py: tf32_fused.py with the cheat's BLOCK_K of 64: every K block
of x and weight loaded and multiplied once, by the trip that loads it."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [128, 256], "BLOCK_K": [64], "GROUP_M": [8], "num_warps": [4, 8], "num_stages": [1, 2, 3]}


@triton.jit
def linear_sub_mul_relu(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + kk[:, None] * stride_wk + rn[None, :] * stride_wn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    y = (acc + bias[None, :] - 2.0) * 1.5
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], tl.where(y > 0, y, 0.0), mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(x, weight, bias, *, BLOCK, BLOCK_K, GROUP_M, num_warps, num_stages):
    BLOCK_M = BLOCK_N = BLOCK
    M, K = x.shape
    N = weight.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    linear_sub_mul_relu[grid](x, weight, bias, y, M, N, K, x.stride(0), x.stride(1), weight.stride(0),
                              weight.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                              num_warps=num_warps, num_stages=num_stages)
    return y
