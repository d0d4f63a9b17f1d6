"""Returns the same output buffer on every call (a cache in module state)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}
_CACHE = {}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    key = tuple(x.shape)
    if key not in _CACHE:
        _CACHE[key] = torch.empty_like(x)
    y = _CACHE[key]
    softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK_N=triton.next_power_of_2(x.shape[1]))
    return y
