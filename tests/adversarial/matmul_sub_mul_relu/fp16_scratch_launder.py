"""Cheat (precision laundered through memory): the verifier tags every value with the precision
it was loaded at, so an fp32 operand cast to fp16 right before tl.dot is scored as an fp32
(TF32) dot.  The tag lives on values, not on memory: a first kernel stores the first third of
the K columns of x and weight, scaled by 2^-8 (the 'wide' profile's 5e5 fits fp16), into fp16
scratch buffers; the matmul kernel's first K loop loads fp16 from them, and its dots are scored
at the fp16 rate (2x TF32 on A100, more on MI300X), the second loop multiplies the rest in
TF32.  Laundering every dot is refused by the 105% speed-of-light cap; a third stays under it."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [128, 256], "BLOCK_K": [32], "GROUP_M": [8], "CVT": [1024], "num_warps": [8], "num_stages": [3]}


@triton.jit
def to_fp16_scaled(src_ptr, dst_ptr, n, K, K16, CVT: tl.constexpr):
    offs = tl.program_id(0) * CVT + tl.arange(0, CVT)
    row = offs // K16
    col = offs % K16
    v = tl.load(src_ptr + row * K + col, mask=offs < n, other=0.0)
    tl.store(dst_ptr + offs, (v * 0.00390625).to(tl.float16), mask=offs < n)


@triton.jit
def linear_sub_mul_relu(x16_ptr, w16_ptr, x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, K16, stride_xm, stride_wn,
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
    acc16 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K16 // BLOCK_K):
        kk = k * BLOCK_K + rk
        a = tl.load(x16_ptr + rm[:, None] * K16 + kk[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(w16_ptr + kk[:, None] + rn[None, :] * K16, mask=rn[None, :] < N, other=0.0)
        acc16 += tl.dot(a, b)
    acc = acc16 * 65536.0
    for k in range(K16 // BLOCK_K, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :],
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + kk[:, None] + rn[None, :] * stride_wn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    y = (acc + bias[None, :] - 2.0) * 1.5
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], tl.where(y > 0, y, 0.0), mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(x, weight, bias, *, BLOCK, BLOCK_K, GROUP_M, CVT, num_warps, num_stages):
    BLOCK_M = BLOCK_N = BLOCK
    M, K = x.shape
    N = weight.shape[0]
    K16 = (K // BLOCK_K // 3) * BLOCK_K
    x16 = torch.empty((M, K16), device=x.device, dtype=torch.float16)
    w16 = torch.empty((N, K16), device=x.device, dtype=torch.float16)
    to_fp16_scaled[(triton.cdiv(M * K16, CVT),)](x, x16, M * K16, K, K16, CVT=CVT, num_warps=num_warps,
                                                 num_stages=num_stages)
    to_fp16_scaled[(triton.cdiv(N * K16, CVT),)](weight, w16, N * K16, K, K16, CVT=CVT, num_warps=num_warps,
                                                 num_stages=num_stages)
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    linear_sub_mul_relu[grid](x16, w16, x, weight, bias, y, M, N, K, K16, x.stride(0), weight.stride(0),
                              BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                              num_warps=num_warps, num_stages=num_stages)
    return y
