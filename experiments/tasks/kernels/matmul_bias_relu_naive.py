"""Naive linear + bias + ReLU (fp16), unfused: y = relu(x @ weight.T + bias).

Kernel 1: small-tile matmul writes an fp32 intermediate.  Kernel 2: one small
block per program adds the bias, applies ReLU and casts to fp16.
"""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [16, 32], "BLOCK_N": [16, 32], "BLOCK_K": [16], "BLOCK": [256],
          "num_warps": [4], "num_stages": [1]}


@triton.jit
def matmul_kernel(x_ptr, w_ptr, c_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    rm = (pid // num_pid_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % num_pid_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + kk[:, None] * stride_wk + rn[None, :] * stride_wn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def bias_relu_kernel(c_ptr, bias_ptr, y_ptr, n_elements, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    c = tl.load(c_ptr + offs, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + offs % N, mask=mask, other=0.0).to(tl.float32)
    y = c + bias
    y = tl.where(y > 0, y, 0.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, weight, bias, *, BLOCK_M, BLOCK_N, BLOCK_K, BLOCK, num_warps, num_stages):
    M, K = x.shape
    N = weight.shape[0]
    c = torch.empty((M, N), device=x.device, dtype=torch.float32)
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](x, weight, c, M, N, K, x.stride(0), x.stride(1), weight.stride(0), weight.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        num_warps=num_warps, num_stages=num_stages)
    bias_relu_kernel[(triton.cdiv(M * N, BLOCK),)](c, bias, y, M * N, N, BLOCK=BLOCK,
                                                   num_warps=num_warps, num_stages=num_stages)
    return y
