"""Unfused cross-entropy in the base-2 domain (exp2/log2 online logsumexp), then a deterministic two-level mean: per-block partial sums, then one program sums them."""
import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)
PARAMS = {"BLOCK_C": [1024], "BLOCK_B": [256], "num_warps": [4], "num_stages": [1]}


@triton.jit
def row_loss_exp2(logits_ptr, targets_ptr, loss_ptr, n_classes, stride, BLOCK_C: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_C)
    m = tl.full([BLOCK_C], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(0, n_classes, BLOCK_C):
        mask = start + cols < n_classes
        x = tl.load(logits_ptr + row * stride + start + cols, mask=mask, other=float("-inf")).to(tl.float32) * LOG2E
        m_new = tl.maximum(m, x)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp2(m - m_safe) + tl.exp2(x - m_safe)
        m = m_new
    mx = tl.max(m, axis=0)
    lse2 = mx + tl.log2(tl.sum(s * tl.exp2(m - mx), axis=0))
    target = tl.load(targets_ptr + row)
    x_target = tl.load(logits_ptr + row * stride + target).to(tl.float32)
    tl.store(loss_ptr + row, lse2 * LN2 - x_target)


@triton.jit
def block_sums(loss_ptr, part_ptr, n_rows, BLOCK_B: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    tl.store(part_ptr + tl.program_id(0), tl.sum(tl.load(loss_ptr + offs, mask=offs < n_rows, other=0.0), axis=0))


@triton.jit
def final_mean(part_ptr, out_ptr, n_parts, n_rows, BLOCK_B: tl.constexpr):
    offs = tl.arange(0, BLOCK_B)
    acc = tl.zeros([BLOCK_B], dtype=tl.float32)
    for start in range(0, n_parts, BLOCK_B):
        acc += tl.load(part_ptr + start + offs, mask=start + offs < n_parts, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n_rows)


def launch(logits, targets, *, BLOCK_C, BLOCK_B, num_warps, num_stages):
    n_rows, n_classes = logits.shape
    n_parts = triton.cdiv(n_rows, BLOCK_B)
    losses = torch.empty((n_rows,), device=logits.device, dtype=torch.float32)
    parts = torch.empty((n_parts,), device=logits.device, dtype=torch.float32)
    out = torch.empty((), device=logits.device, dtype=torch.float32)
    row_loss_exp2[(n_rows,)](logits, targets, losses, n_classes, logits.stride(0), BLOCK_C=BLOCK_C,
                             num_warps=num_warps, num_stages=num_stages)
    block_sums[(n_parts,)](losses, parts, n_rows, BLOCK_B=BLOCK_B, num_warps=num_warps, num_stages=num_stages)
    final_mean[(1,)](parts, out, n_parts, n_rows, BLOCK_B=BLOCK_B, num_warps=num_warps, num_stages=num_stages)
    return out
