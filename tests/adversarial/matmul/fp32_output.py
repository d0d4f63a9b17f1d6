"""Passes the static checks; returns the fp32 accumulator instead of fp16."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [16], "BLOCK_N": [16], "BLOCK_K": [16], "num_warps": [4], "num_stages": [1]}


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    rm = (pid // num_pid_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % num_pid_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(a, b, *, BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float32)
    matmul_kernel[(triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)](a, b, c, M, N, K, BLOCK_M=BLOCK_M,
                                                                        BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return c
