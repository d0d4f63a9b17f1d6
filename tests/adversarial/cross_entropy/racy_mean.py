"""Cheat (a data race the sequential checks cannot see): every program adds its row's loss into
the scalar output with a plain load and store instead of an atomic.  Run one program after
another, in any order (the verifier shuffles the order), this sums every loss exactly once; on a
GPU thousands of programs read the same old value at once and most losses are lost."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_C": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def row_loss_mean(logits_ptr, targets_ptr, out_ptr, n_rows, n_classes, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    x_row = logits_ptr + row * n_classes
    cols = tl.arange(0, BLOCK_C)
    m = tl.full([BLOCK_C], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(0, n_classes, BLOCK_C):
        mask = start + cols < n_classes
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf"))
        m_new = tl.maximum(m, x)
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * alpha + tl.where(mask, tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    target = tl.load(targets_ptr + row)
    loss = tl.log(row_sum) + row_max - tl.load(x_row + target)
    total = tl.load(out_ptr)
    tl.store(out_ptr, total + loss / n_rows)


def launch(logits, targets, *, BLOCK_C, num_warps, num_stages):
    n_rows, n_classes = logits.shape
    out = torch.zeros((), device=logits.device, dtype=torch.float32)
    row_loss_mean[(n_rows,)](logits, targets, out, n_rows, n_classes, BLOCK_C=BLOCK_C,
                             num_warps=num_warps, num_stages=num_stages)
    return out
