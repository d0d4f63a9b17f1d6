"""Transpose without tl.trans: a tile loaded along x's rows is stored through transposed output pointers (strided stores)."""
import torch
import triton
import triton.language as tl

PARAMS = {"TILE_M": [32], "TILE_N": [32], "num_warps": [4], "num_stages": [1]}


@triton.jit
def transpose_scatter(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, TILE_M: tl.constexpr, TILE_N: tl.constexpr):
    rows = tl.program_id(0) * TILE_M + tl.arange(0, TILE_M)
    cols = tl.program_id(1) * TILE_N + tl.arange(0, TILE_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows.to(tl.int64)[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + cols.to(tl.int64)[None, :] * stride_y + rows[:, None], tile, mask=mask)


def launch(x, *, TILE_M, TILE_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty((n_cols, n_rows), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(n_rows, TILE_M), triton.cdiv(n_cols, TILE_N))
    transpose_scatter[grid](x, y, n_rows, n_cols, x.stride(0), y.stride(0), TILE_M=TILE_M, TILE_N=TILE_N,
                            num_warps=num_warps, num_stages=num_stages)
    return y
