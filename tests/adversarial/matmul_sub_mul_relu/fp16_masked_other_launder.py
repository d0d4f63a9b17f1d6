"""Cheat (fp32 data priced as fp16): fp32 operands scaled by 2^-8 and converted to fp16, passed as the `other` of a fully masked-off load
through an fp16 pointer (no address is touched); the fp16 dot then runs on the converted values.
First third of the K loop laundered to fp16, the rest a plain TF32 dot."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [128, 256], "BLOCK_K": [32], "GROUP_M": [8], "num_warps": [8], "num_stages": [3]}


@triton.jit
def linear_sub_mul_relu(x_ptr, w_ptr, bias_ptr, y_ptr, h_ptr, off, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
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
    acc32 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    n_k = tl.cdiv(K, BLOCK_K)
    half = n_k // 3
    for k in range(0, half):
        kk = k * BLOCK_K + rk
        a = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + kk[:, None] * stride_wk + rn[None, :] * stride_wn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        # scaled into fp16's range; the load is masked off everywhere (off == 0) and returns `other`
        a16 = tl.load(h_ptr + rm[:, None] * 0 + kk[None, :] * 0, mask=kk[None, :] < off, other=(a * 0.00390625).to(tl.float16))
        b16 = tl.load(h_ptr + kk[:, None] * 0 + rn[None, :] * 0, mask=kk[:, None] < off, other=(b * 0.00390625).to(tl.float16))
        acc += tl.dot(a16, b16)
    for k in range(half, n_k):
        kk = k * BLOCK_K + rk
        a = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + kk[:, None] * stride_wk + rn[None, :] * stride_wn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc32 += tl.dot(a, b)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    y = (acc * 65536.0 + acc32 + bias[None, :] - 2.0) * 1.5
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], tl.where(y > 0, y, 0.0), mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(x, weight, bias, *, BLOCK, BLOCK_K, GROUP_M, num_warps, num_stages):
    BLOCK_M = BLOCK_N = BLOCK
    M, K = x.shape
    N = weight.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    h = torch.empty((16,), device=x.device, dtype=torch.float16)
    linear_sub_mul_relu[grid](x, weight, bias, y, h, 0, M, N, K, x.stride(0), x.stride(1), weight.stride(0),
                              weight.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                              num_warps=num_warps, num_stages=num_stages)
    return y
