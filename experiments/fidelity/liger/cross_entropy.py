"""Cross-entropy with its gradient, in the style of Liger-Kernel 0.5.2's forward.

Follows the published algorithm (experiments/fidelity/README.md): grid (BT,), num_warps 32,
BLOCK_SIZE = min(32768, next_power_of_2(V)), one program per row looping over the row in
BLOCK_SIZE chunks.  Pass 1: online softmax (running max and rescaled sum of exp, fp32) and one
scalar load of x[target].  Pass 2: re-reads every chunk and writes the gradient
(softmax - onehot) / BT.  The row's loss (m + log d - x[target]) / BT goes to an fp32 [BT]
vector that a second one-program kernel sums (Liger calls torch.sum there).  Liger writes the
gradient in place over the logits; the verifier keeps inputs read-only, so it goes to a new
tensor here (the same DRAM traffic: 2 reads + 1 write of the logits).  Liger's host-side
(target != ignore_index).sum().item() is not reproduced: no ignore_index in this task.
"""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_R": [1024], "num_warps": [32], "num_stages": [1]}


@triton.jit
def ce_loss_grad_kernel(x_ptr, t_ptr, grad_ptr, loss_ptr, n_cols, inv_rows, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    g_row = grad_ptr + row * n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    target = tl.load(t_ptr + row)
    x_target = tl.load(x_row + target).to(tl.float32)
    m = float("-inf")
    d = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        p = tl.exp(x - m) / d
        p = tl.where(start + cols == target, p - 1.0, p) * inv_rows
        tl.store(g_row + start + cols, p, mask=mask)
    tl.store(loss_ptr + row, (m + tl.log(d) - x_target) * inv_rows)


@triton.jit
def sum_kernel(v_ptr, out_ptr, n, BLOCK_R: tl.constexpr):
    offs = tl.arange(0, BLOCK_R)
    acc = tl.zeros([BLOCK_R], dtype=tl.float32)
    for start in range(0, n, BLOCK_R):
        acc += tl.load(v_ptr + start + offs, mask=start + offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def launch(logits, targets, *, BLOCK_R, num_warps, num_stages):
    n_rows, n_cols = logits.shape
    grad = torch.empty_like(logits)
    losses = torch.empty((n_rows,), device=logits.device, dtype=torch.float32)
    loss = torch.empty((), device=logits.device, dtype=torch.float32)
    block = min(32768, triton.next_power_of_2(n_cols))
    ce_loss_grad_kernel[(n_rows,)](logits, targets, grad, losses, n_cols, 1.0 / n_rows, BLOCK_SIZE=block,
                                   num_warps=num_warps, num_stages=num_stages)
    sum_kernel[(1,)](losses, loss, n_rows, BLOCK_R=BLOCK_R, num_warps=4, num_stages=1)
    return loss, grad
