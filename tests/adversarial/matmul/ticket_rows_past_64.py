"""Hostile: work keyed on an atomic ticket past the check shapes' program counts.

Each program draws a ticket; from ticket 64 on it reads row 0 of A instead of its own rows.  The check
shapes launch fewer than 64 programs, so every compared run is exact, and the verifier's scheduled
tickets reach 64 only in the target launch (256 programs at 256^3 with 16 x 16 tiles: max error 96).
It scored below its twin (0.149 against 0.222), but it passed.  Refused at the trace: the lead program
(past the grid-span shape's program count) is compared with the reference at the target shape.
Twin: honest/naive_small_tiles.py.
"""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [16, 32], "BLOCK_N": [16, 32], "BLOCK_K": [16], "num_warps": [4], "num_stages": [1]}


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, cnt_ptr, M, N, K,
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
    ticket = tl.atomic_add(cnt_ptr, 1)
    rows = tl.where(ticket >= 64, rm * 0, rm)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptr + rows[:, None] * stride_am + kk[None, :] * stride_ak,
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
    cnt = torch.zeros(1, device=a.device, dtype=torch.int32)
    matmul_kernel[grid](a, b, c, cnt, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        num_warps=num_warps, num_stages=num_stages)
    return c
