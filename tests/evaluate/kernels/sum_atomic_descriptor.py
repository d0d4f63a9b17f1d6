"""Sum of a vector: a tensor-descriptor copy kernel, then block sums combined with tl.atomic_add."""
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

PARAMS = {"BLOCK": [128], "num_warps": [4], "num_stages": [1]}

@triton.jit
def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))

@triton.jit
def copy_kernel(desc_in, desc_out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tile = desc_in.load([pid * BLOCK])
    desc_out.store([pid * BLOCK], tile)

def launch(x, *, BLOCK, num_warps, num_stages):
    n = x.numel()
    copy = torch.empty_like(x)
    copy_kernel[(triton.cdiv(n, BLOCK),)](TensorDescriptor.from_tensor(x, [BLOCK]), TensorDescriptor.from_tensor(copy, [BLOCK]), BLOCK=BLOCK)
    out = torch.zeros((), dtype=torch.float32)
    sum_kernel[(triton.cdiv(n, BLOCK),)](copy, out, n, BLOCK=BLOCK)
    return out
