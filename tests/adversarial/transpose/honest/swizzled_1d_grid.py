"""Tiled transpose on a 1-D grid reordered with tl.swizzle2d so neighbouring programs share output rows (L2 locality)."""
import torch
import triton
import triton.language as tl

PARAMS = {"TILE": [64], "GROUP": [8], "num_warps": [4], "num_stages": [1]}


@triton.jit
def transpose_swizzled(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, TILE: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(n_rows, TILE)
    tiles_n = tl.cdiv(n_cols, TILE)
    pid_m, pid_n = tl.swizzle2d(pid // tiles_n, pid % tiles_n, tiles_m, tiles_n, GROUP)
    rows = pid_m * TILE + tl.arange(0, TILE)
    cols = pid_n * TILE + tl.arange(0, TILE)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows.to(tl.int64)[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + cols.to(tl.int64)[:, None] * stride_y + rows[None, :], tl.trans(tile), mask=tl.trans(mask))


def launch(x, *, TILE, GROUP, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty((n_cols, n_rows), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(n_rows, TILE) * triton.cdiv(n_cols, TILE),)
    transpose_swizzled[grid](x, y, n_rows, n_cols, x.stride(0), y.stride(0), TILE=TILE, GROUP=GROUP,
                             num_warps=num_warps, num_stages=num_stages)
    return y
