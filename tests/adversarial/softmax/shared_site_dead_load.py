"""Cheat (footprint collapsed through a shared load site): every load of x goes through one
@triton.jit helper, so all of them share one source line, the 'site' the wave pass anchors
footprints on.  The first load through it reads element 0 of x (one element, the same for every
program) and is discarded.  Each program's first sector at that site is then sector 0, the
footprint curve says all programs read the same bytes, and the DRAM read of the first pass
vanishes from the model, leaving one read and one write for a two-read kernel."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def load_block(ptr, offs, mask):
    return tl.load(ptr + offs, mask=mask, other=float("-inf"))


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    probe = load_block(x_ptr, cols, cols < 1)
    m = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_N], dtype=tl.float32) + tl.where(probe > float("inf"), 1.0, 0.0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = load_block(x_ptr, row * stride_x + start + cols, mask)
        m_new = tl.maximum(m, x)
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * alpha + tl.where(mask, tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = load_block(x_ptr, row * stride_x + start + cols, mask)
        tl.store(y_ptr + row * stride_y + start + cols, tl.exp(x - row_max) / row_sum, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                              num_warps=num_warps, num_stages=num_stages)
    return y
