"""Transpose by strips: each program owns TILE rows of x and loops over all column tiles of the strip, transposing each."""
import torch
import triton
import triton.language as tl

PARAMS = {"TILE": [32], "num_warps": [4], "num_stages": [1]}


@triton.jit
def transpose_strip(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, TILE: tl.constexpr):
    rows = tl.program_id(0) * TILE + tl.arange(0, TILE)
    row_mask = rows < n_rows
    offs = tl.arange(0, TILE)
    for start in range(0, n_cols, TILE):
        cols = start + offs
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        tile = tl.load(x_ptr + rows.to(tl.int64)[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
        tl.store(y_ptr + cols.to(tl.int64)[:, None] * stride_y + rows[None, :], tl.trans(tile), mask=tl.trans(mask))


def launch(x, *, TILE, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty((n_cols, n_rows), device=x.device, dtype=x.dtype)
    transpose_strip[(triton.cdiv(n_rows, TILE),)](x, y, n_rows, n_cols, x.stride(0), y.stride(0), TILE=TILE,
                                                  num_warps=num_warps, num_stages=num_stages)
    return y
