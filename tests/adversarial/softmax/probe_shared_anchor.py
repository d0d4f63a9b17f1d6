"""Cheat (sharing claimed through a probe): online softmax (two reads + one write per row) with a
one-element probe through the shared load helper:
each program probes the first element of the first row of its group of GROUP consecutive rows.  The
wave pass anchors the helper's one load site on that probe, so pairs of programs looked as if they read
the same row and the first pass's DRAM read was halved (1.39 against 1.11 honest)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024, 4096], "num_warps": [4, 8], "num_stages": [1, 3], "GROUP": [2]}


@triton.jit
def load_block(ptr, offs, mask):
    return tl.load(ptr + offs, mask=mask, other=float("-inf"))


@triton.jit
def softmax_online(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr, GROUP: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    probe_row = row - row % GROUP
    probe = load_block(x_ptr, probe_row * stride_x + cols, cols < 1)
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


def launch(x, *, BLOCK_N, GROUP, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_online[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N, GROUP=GROUP,
                              num_warps=num_warps, num_stages=num_stages)
    return y
