"""Has no PARAMS."""
import torch
import triton
import triton.language as tl


def launch(x, *, BLOCK_N=256, num_warps=4, num_stages=1):
    return torch.empty_like(x)
