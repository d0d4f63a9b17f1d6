"""fp16 matmul with 128x256x64 tiles and 4 stages: 144-192 KiB of shared memory (fits NVIDIA GPUs, not a 64 KiB LDS)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [128], "BLOCK_N": [256], "BLOCK_K": [64], "num_warps": [8], "num_stages": [4]}


@triton.jit
def big_tile_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    rm = (pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


def launch(a, b, *, BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    big_tile_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=BLOCK_M,
                          BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=num_warps, num_stages=num_stages)
    return c
