"""Softmax as two launches: row statistics (max, sum) into a scratch buffer, then normalise."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


@triton.jit
def stats_kernel(x_ptr, stats_ptr, n_cols, stride_x, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    run_max = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        run_max = tl.maximum(run_max, x)
    m = tl.max(run_max, axis=0)
    run_sum = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        run_sum += tl.exp(x - m)
    tl.store(stats_ptr + row * 2, m)
    tl.store(stats_ptr + row * 2 + 1, tl.sum(run_sum, axis=0))


@triton.jit
def normalize_kernel(x_ptr, stats_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    block = tl.program_id(1)
    cols = block * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    m = tl.load(stats_ptr + row * 2)
    s = tl.load(stats_ptr + row * 2 + 1)
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_y + cols, tl.exp(x - m) / s, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    stats = torch.empty((n_rows, 2), dtype=torch.float32)
    y = torch.empty_like(x)
    stats_kernel[(n_rows,)](x, stats, n_cols, x.stride(0), BLOCK_N=BLOCK_N, num_warps=num_warps)
    normalize_kernel[(n_rows, triton.cdiv(n_cols, BLOCK_N))](x, stats, y, n_cols, x.stride(0), y.stride(0),
                                                            BLOCK_N=BLOCK_N, num_warps=num_warps)
    return y
