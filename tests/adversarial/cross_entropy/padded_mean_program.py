"""Cheat (a serial kernel diluted by idle programs): the single-program mean over the batch is
launched on 257 programs, of which only program 0 works.  The trace weighs the first program as
1/257 of the grid, so the model sees 257 programs each running 1/257 of the loop: its serial
chain of dependent loads (128 trips at L2/DRAM latency) is spread over the whole GPU.  On a
GPU program 0 still runs every trip alone."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_C": [256, 512], "BLOCK_B": [256], "num_warps": [4], "num_stages": [1]}


@triton.jit
def row_loss_kernel(logits_ptr, targets_ptr, loss_ptr, n_classes, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    x_row = logits_ptr + row * n_classes
    cols = tl.arange(0, BLOCK_C)
    row_max = tl.full([BLOCK_C], float("-inf"), dtype=tl.float32)
    for start in range(0, n_classes, BLOCK_C):
        mask = start + cols < n_classes
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        row_max = tl.maximum(row_max, x)
    m = tl.max(row_max, axis=0)
    row_sum = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(0, n_classes, BLOCK_C):
        mask = start + cols < n_classes
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        row_sum += tl.exp(x - m)
    target = tl.load(targets_ptr + row)
    x_target = tl.load(x_row + target).to(tl.float32)
    tl.store(loss_ptr + row, tl.log(tl.sum(row_sum, axis=0)) + m - x_target)


@triton.jit
def mean_kernel(loss_ptr, out_ptr, n_rows, BLOCK_B: tl.constexpr):
    if tl.program_id(0) == 0:
        offs = tl.arange(0, BLOCK_B)
        acc = tl.zeros([BLOCK_B], dtype=tl.float32)
        for start in range(0, n_rows, BLOCK_B):
            acc += tl.load(loss_ptr + start + offs, mask=start + offs < n_rows, other=0.0)
        tl.store(out_ptr, (tl.sum(acc, axis=0) / n_rows).to(out_ptr.dtype.element_ty))


def launch(logits, targets, *, BLOCK_C, BLOCK_B, num_warps, num_stages):
    n_rows, n_classes = logits.shape
    losses = torch.empty((n_rows,), device=logits.device, dtype=torch.float32)
    out = torch.empty((), device=logits.device, dtype=logits.dtype)
    row_loss_kernel[(n_rows,)](logits, targets, losses, n_classes, BLOCK_C=BLOCK_C,
                               num_warps=num_warps, num_stages=num_stages)
    mean_kernel[(257,)](losses, out, n_rows, BLOCK_B=BLOCK_B, num_warps=num_warps, num_stages=num_stages)
    return out
