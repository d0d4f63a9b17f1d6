"""Fused cross-entropy over BLOCK_R rows per program: 2-D tiles, online logsumexp per row, target logits gathered with one masked load, the block's loss sum / B atomically added."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_R": [8], "BLOCK_C": [512], "num_warps": [4], "num_stages": [1]}


@triton.jit
def ce_rows_online(logits_ptr, targets_ptr, out_ptr, n_rows, n_classes, stride,
                   BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    base = logits_ptr + rows.to(tl.int64) * stride
    cols = tl.arange(0, BLOCK_C)
    m = tl.full([BLOCK_R], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_R], dtype=tl.float32)
    for start in range(0, n_classes, BLOCK_C):
        mask = row_mask[:, None] & (start + cols[None, :] < n_classes)
        x = tl.load(base[:, None] + start + cols[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe[:, None]), axis=1)
        m = m_new
    targets = tl.load(targets_ptr + rows, mask=row_mask, other=0)
    x_target = tl.load(base + targets, mask=row_mask, other=0.0).to(tl.float32)
    loss = tl.where(row_mask, m + tl.log(s) - x_target, 0.0)
    tl.atomic_add(out_ptr, tl.sum(loss, axis=0) / n_rows)


def launch(logits, targets, *, BLOCK_R, BLOCK_C, num_warps, num_stages):
    n_rows, n_classes = logits.shape
    out = torch.zeros((), device=logits.device, dtype=torch.float32)
    ce_rows_online[(triton.cdiv(n_rows, BLOCK_R),)](logits, targets, out, n_rows, n_classes, logits.stride(0),
                                                    BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, num_warps=num_warps,
                                                    num_stages=num_stages)
    return out
