"""Cheat (host code run by the launcher): a pre-run hook receives the kernel's arguments just
before each launch and could compute the output with torch there.  Registering one needs an
attribute of the kernel object, which the host language does not list."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=float("-inf"))
    tl.store(y_ptr + row * stride_y + cols, x, mask=mask)


def fill_output(args):
    args["y_ptr"].copy_(args["x_ptr"].softmax(-1))


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel.add_pre_run_hook(fill_output)
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                              num_warps=num_warps, num_stages=num_stages)
    return y
