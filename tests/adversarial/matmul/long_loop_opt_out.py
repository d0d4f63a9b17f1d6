"""Hostile: an opt-out of the target-output comparison that does not pay.

Programs past id 200 run half the K loop, and a dummy loop of 1,100 trips (past the trace's 1,024
dense trips) makes the lead program's loops sampled, so its outputs are not compared at the target
launch (judge/target_outputs.py skips it: "loops sampled").  The model charges the dummy loop's trips,
so it scores 0.073 against its honest twin's 0.222 (2026-12-01): the half K is paid for three times
over.  Twin: honest/naive_small_tiles.py.
"""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [16, 32], "BLOCK_N": [16, 32], "BLOCK_K": [16], "num_warps": [4], "num_stages": [1]}


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k_tiles = tl.cdiv(K, BLOCK_K)
    extra = 0
    for i in range(0, 1100):
        extra += 0
    k_tiles = k_tiles + extra
    k_tiles = tl.where(pid >= 200, k_tiles // 2, k_tiles)
    for k in range(0, k_tiles):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(a, b, *, BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        num_warps=num_warps, num_stages=num_stages)
    return c
