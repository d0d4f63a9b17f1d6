"""Falls back to torch whenever the kernel fails."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


@triton.jit
def broken_kernel(x_ptr, y_ptr, BLOCK_N: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, BLOCK_N), tl.load(x_ptr + tl.arange(0, BLOCK_N)) * undefined_name)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    y = torch.empty_like(x)
    try:
        broken_kernel[(1,)](x, y, BLOCK_N=BLOCK_N)
    except Exception:
        y = torch.softmax(x, -1)
    return y
