"""Split-K GEMM: programs over (tile, K slice) tl.atomic_add fp32 partials into a zeroed workspace, then a kernel casts it to fp16."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [64], "BLOCK_N": [64], "BLOCK_K": [32], "SPLIT_K": [4], "BLOCK": [1024],
          "num_warps": [4], "num_stages": [2]}


@triton.jit
def matmul_splitk(a_ptr, b_ptr, ws_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    rm = (pid // num_pid_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % num_pid_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    k_tiles = tl.cdiv(K, BLOCK_K)
    per_split = tl.cdiv(k_tiles, SPLIT_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(split * per_split, tl.minimum((split + 1) * per_split, k_tiles)):
        kk = kt * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.atomic_add(ws_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def cast_out(ws_ptr, c_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(c_ptr + offs, tl.load(ws_ptr + offs, mask=mask, other=0.0).to(c_ptr.dtype.element_ty), mask=mask)


def launch(a, b, *, BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, BLOCK, num_warps, num_stages):
    M, K = a.shape
    N = b.shape[1]
    ws = torch.zeros((M, N), device=a.device, dtype=torch.float32)
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), SPLIT_K)
    matmul_splitk[grid](a, b, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, SPLIT_K=SPLIT_K,
                        num_warps=num_warps, num_stages=num_stages)
    cast_out[(triton.cdiv(M * N, BLOCK),)](ws, c, M * N, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return c
