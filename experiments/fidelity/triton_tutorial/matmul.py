"""fp16 matmul C = A @ B in the style of Triton's tutorial 03 ("Matrix Multiplication").

Follows the published algorithm (experiments/fidelity/triton_tutorial_a100.yaml): a 1-D grid of
cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) programs, each computing one BLOCK_M x BLOCK_N tile of C.
Program ids are reordered in groups of GROUP_SIZE_M tile rows (column-major inside a group) so
that programs running together share rows of A and columns of B in L2.  Row and column offsets
wrap modulo M and N (the loads stay inside A and B; the wrapped rows are never stored), the K
loop loads masked BLOCK_K slices of A and B and accumulates tl.dot in fp32, and the tile is
rounded to fp16 and stored under an M / N mask.  A [M, K] and B [K, N] are row-major.

The tutorial autotunes over a fixed list of tile sizes, each with its own num_warps and
num_stages; TILE names one entry ("BMxBNxBK") and the dataset rows give every entry with the
num_warps / num_stages it ran with.
"""
import torch
import triton
import triton.language as tl

PARAMS = {
    "TILE": ["128x256x64", "64x256x32", "128x128x32", "128x64x32", "64x128x32", "128x32x32", "64x32x32",
             "32x64x32", "128x256x128", "256x128x128", "256x64x128", "64x256x128", "128x128x128", "128x64x64",
             "64x128x64", "128x32x64"],
    "GROUP_SIZE_M": [8],
    "num_warps": [8, 4, 2],
    "num_stages": [3, 4, 5],
}

# TILE name -> (BLOCK_M, BLOCK_N, BLOCK_K)
TILE_SIZES = (
    ("128x256x64", 128, 256, 64), ("64x256x32", 64, 256, 32), ("128x128x32", 128, 128, 32),
    ("128x64x32", 128, 64, 32), ("64x128x32", 64, 128, 32), ("128x32x32", 128, 32, 32),
    ("64x32x32", 64, 32, 32), ("32x64x32", 32, 64, 32), ("128x256x128", 128, 256, 128),
    ("256x128x128", 256, 128, 128), ("256x64x128", 256, 64, 128), ("64x256x128", 64, 256, 128),
    ("128x128x128", 128, 128, 128), ("128x64x64", 128, 64, 64), ("64x128x64", 64, 128, 64),
    ("128x32x64", 128, 32, 64),
)


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
    block_m, block_n, block_k = 0, 0, 0
    for name, bm, bn, bk in TILE_SIZES:
        if name == TILE:
            block_m, block_n, block_k = bm, bn, bk
    if block_m == 0:
        raise ValueError(f"unknown TILE {TILE}")
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    grouped_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                GROUP_SIZE_M=GROUP_SIZE_M, num_warps=num_warps, num_stages=num_stages)
    return c
