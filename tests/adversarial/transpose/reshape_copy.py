"""Cheat (a copy hidden in a view method): `reshape` is on the list of views, but reshaping a
transposed view cannot be a view, so torch copies: `x.t().reshape(-1)` is the whole transpose,
done by torch on the host.  A kernel then copies that buffer into the output.  The static gate
allows reshape; the dispatch guard must refuse the copy at run time."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [1024], "num_warps": [4], "num_stages": [1]}


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask, other=0.0), mask=mask)


def launch(x, *, BLOCK, num_warps, num_stages):
    n_rows, n_cols = x.shape
    flipped = x.t().reshape(-1)
    y = torch.empty((n_cols, n_rows), device=x.device, dtype=x.dtype)
    n = x.numel()
    copy_kernel[(triton.cdiv(n, BLOCK),)](flipped, y, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
