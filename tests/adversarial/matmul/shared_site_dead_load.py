"""Cheat (footprint collapsed through a shared load site): A and B are loaded through one
@triton.jit helper, so all their loads share one source line.  Each program first loads
element 0 of A and of B through it (discarded).  The wave pass anchors each program's
footprint on the first sector it touches at that site, sector 0 for every program, so the
model believes all programs read the same bytes and charges almost no DRAM reads."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [128], "BLOCK_N": [128], "BLOCK_K": [32], "GROUP_M": [8], "num_warps": [8], "num_stages": [3]}


@triton.jit
def load_tile(ptr, offs, mask):
    return tl.load(ptr + offs, mask=mask, other=0.0)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
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
    probe_a = load_tile(a_ptr, rk[None, :] * 0, rk[None, :] < 1)
    probe_b = load_tile(b_ptr, rk[:, None] * 0, rk[:, None] < 1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32) + tl.sum(probe_a * 0) + tl.sum(probe_b * 0)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = load_tile(a_ptr, rm[:, None] * stride_am + kk[None, :] * stride_ak, (rm[:, None] < M) & (kk[None, :] < K))
        b = load_tile(b_ptr, kk[:, None] * stride_bk + rn[None, :] * stride_bn, (kk[:, None] < K) & (rn[None, :] < N))
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(a, b, *, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                        num_warps=num_warps, num_stages=num_stages)
    return c
