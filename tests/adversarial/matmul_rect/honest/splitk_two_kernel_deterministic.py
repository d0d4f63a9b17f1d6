"""Deterministic split-K: each (tile, K slice) program stores its fp32 partial to a [SPLIT_K, M, N] buffer; a second kernel sums the slices in order and casts."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [64], "BLOCK_N": [128], "BLOCK_K": [64], "SPLIT_K": [4], "BLOCK": [1024],
          "num_warps": [4], "num_stages": [3]}


@triton.jit
def matmul_partials(a_ptr, b_ptr, p_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    split = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
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
    out = p_ptr + split.to(tl.int64) * M * N + rm[:, None] * N + rn[None, :]
    tl.store(out, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def reduce_partials(p_ptr, c_ptr, n_elements, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(p_ptr + s * n_elements + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def launch(a, b, *, BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, BLOCK, num_warps, num_stages):
    M, K = a.shape
    N = b.shape[1]
    partials = torch.empty((SPLIT_K, M, N), device=a.device, dtype=torch.float32)
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N), SPLIT_K)
    matmul_partials[grid](a, b, partials, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                          BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, SPLIT_K=SPLIT_K,
                          num_warps=num_warps, num_stages=num_stages)
    reduce_partials[(triton.cdiv(M * N, BLOCK),)](partials, c, M * N, SPLIT_K=SPLIT_K, BLOCK=BLOCK,
                                                  num_warps=num_warps, num_stages=num_stages)
    return c
