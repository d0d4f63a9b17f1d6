"""Row cumsum with tl.associative_scan and a user combine function, blocks chained by a running carry."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def add_combine(a, b):
    return a + b


@triton.jit
def cumsum_assoc(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    carry = 0.0
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=0.0).to(tl.float32)
        scanned = tl.associative_scan(x, 0, add_combine)
        tl.store(y_ptr + row * stride_y + start + cols, (scanned + carry).to(y_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    cumsum_assoc[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                            num_warps=num_warps, num_stages=num_stages)
    return y
