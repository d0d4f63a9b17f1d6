"""fp16 matmul C = A @ B: the Triton tutorial-03 kernel of ``matmul.py`` with an open tile list.

The jit function is the one of ``matmul.py``, unchanged (grouped program order, wrapped row and
column offsets, masked BLOCK_K slices, fp32 tl.dot accumulation, fp16 output; A [M, K] and B [K, N]
row-major).  Only PARAMS differ: TILE ("BMxBNxBK", each a power of two >= 16) lists the CTA tiles that
NVIDIA's matmul heuristics pick for the shapes of ``matmul_nvmmh_*.yaml`` (the datasets
``nvmmh_*.yaml``, written by ``import_nvmatmul_heuristics.py``, which checks that every tile it uses is
listed).  A separate file so that ``matmul.py``'s trace cache (the tutorial datasets') stays as it is.
"""
import torch
import triton
import triton.language as tl

PARAMS = {
    "TILE": ["16x32x64", "16x64x64", "32x32x64", "64x32x64", "64x64x64", "128x64x64", "128x128x32", "128x128x64",
             "256x64x32", "256x64x64", "256x128x32", "256x128x64"],
    "GROUP_SIZE_M": [8],
    "num_warps": [4, 8, 16],
    "num_stages": [2, 3, 4, 5, 6, 7, 8],
}


@triton.jit
def grouped_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                          stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group_span = GROUP_SIZE_M * tiles_n
    first_m = (pid // group_span) * GROUP_SIZE_M
    rows_in_group = min(tiles_m - first_m, GROUP_SIZE_M)
    tile_m = first_m + (pid % group_span) % rows_in_group
    tile_n = (pid % group_span) // rows_in_group

    rows = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - step * BLOCK_K
        a = tl.load(a_tile, mask=ks[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=ks[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    out_rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn, acc.to(tl.float16),
             mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))


def launch(a, b, *, TILE, GROUP_SIZE_M, num_warps, num_stages):
    M, K = a.shape
    N = b.shape[1]
    block_m, block_n, block_k = (int(v) for v in TILE.split("x"))
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    grouped_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                GROUP_SIZE_M=GROUP_SIZE_M, num_warps=num_warps, num_stages=num_stages)
    return c
