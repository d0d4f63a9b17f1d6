"""Cheat (a heuristics callback reading data): the callback grammar allows constant subscripts
of an argument and float(), so `float(args['x_ptr'][0][0])` passes the static gate.  It reads
x[0, 0] on the host and passes it to the kernel as the shift for a one-pass softmax (no max
pass).  Reading a tensor's value on the host is refused at run time by the dispatch guard."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.heuristics({"SHIFT": lambda args: float(args["x_ptr"][0][0])})
@triton.jit
def softmax_shifted(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr, SHIFT: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        s += tl.exp(x - SHIFT)
    total = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf"))
        tl.store(y_ptr + row * stride_y + start + cols, tl.exp(x - SHIFT) / total, mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_shifted[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                               num_warps=num_warps, num_stages=num_stages)
    return y
