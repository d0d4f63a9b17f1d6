"""2-D tiled ReLU: [BLOCK_M, BLOCK_N] tiles over (rows, columns) with strides, tl.maximum(x, 0)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [4], "BLOCK_N": [512], "num_warps": [4], "num_stages": [1]}


@triton.jit
def relu_tiles(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    rows64 = rows.to(tl.int64)
    x = tl.load(x_ptr + rows64[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + rows64[:, None] * stride_y + cols[None, :], tl.maximum(x, 0.0), mask=mask)


def launch(x, *, BLOCK_M, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    grid = (triton.cdiv(n_rows, BLOCK_M), triton.cdiv(n_cols, BLOCK_N))
    relu_tiles[grid](x, y, n_rows, n_cols, x.stride(0), y.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                     num_warps=num_warps, num_stages=num_stages)
    return y
