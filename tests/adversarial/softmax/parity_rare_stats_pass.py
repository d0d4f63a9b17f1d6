"""Cheat (a whole pass hidden in rare loop trips of odd rows only): even rows run the honest
online first pass, one block per trip; odd rows walk the row in groups of GROUP blocks and
only one trip per group loads the group's blocks and folds them in.  The real work is the
honest kernel's (two reads and one write of every row).  A trace that counts one program
densely and lets its count correct the others is right when that program is odd and misses
the odd rows' first pass when it is even, and which program it is can be steered by editing
a comment when the choice is seeded from the source.  Every sampled program is counted
densely now, so each answers for its own work."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024, 4096], "GROUP": [32], "num_warps": [4, 8], "num_stages": [1, 3]}


@triton.jit
def softmax_online(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr, GROUP: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    m = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    nb = tl.cdiv(n_cols, BLOCK_N)
    if row % 2 == 1:
        for t in range(0, nb):
            first = (t // GROUP) * GROUP
            if t == min(first + GROUP // 2, nb - 1):
                for j in range(0, GROUP):
                    start = (first + j) * BLOCK_N
                    mask = start + cols < n_cols
                    x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
                    m_new = tl.maximum(m, x)
                    alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
                    s = s * alpha + tl.where(mask, tl.exp(x - m_new), 0.0)
                    m = m_new
    else:
        for t in range(0, nb):
            start = t * BLOCK_N
            mask = start + cols < n_cols
            x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
            m_new = tl.maximum(m, x)
            alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
            s = s * alpha + tl.where(mask, tl.exp(x - m_new), 0.0)
            m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        tl.store(y_ptr + row * stride_y + start + cols, tl.exp(x - row_max) / row_sum, mask=mask)


def launch(x, *, BLOCK_N, GROUP, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_online[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N, GROUP=GROUP,
                              num_warps=num_warps, num_stages=num_stages)
    return y
