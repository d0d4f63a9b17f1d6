"""Cheat (pipelining credit from a dummy dot): the model pipelines a loop over num_stages only when
the loop holds a tl.dot, and this naive RMSNorm is bound by the latency of its feature loops (64
dependent trips per pass).  Adding the sum of a 16x16 zero tile times itself to every trip (it
adds zero) makes both loops dot loops, and num_stages=4 then hides their latency.  The same
kernel without the dot gets no such credit whatever num_stages it asks for."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_S": [32, 64], "num_warps": [4], "num_stages": [1, 4]}


@triton.jit
def rmsnorm_kernel(x_ptr, y_ptr, n_features, n_spatial, eps, BLOCK_S: tl.constexpr):
    b = tl.program_id(0)
    s = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    mask = s < n_spatial
    base = b * n_features * n_spatial
    zero_tile = tl.zeros([16, 16], dtype=tl.float16)
    sq = tl.zeros([BLOCK_S], dtype=tl.float32)
    for f in range(0, n_features):
        x = tl.load(x_ptr + base + f * n_spatial + s, mask=mask, other=0.0).to(tl.float32)
        sq += x * x + tl.sum(tl.dot(zero_tile, zero_tile))
    rstd = 1.0 / tl.sqrt(sq / n_features + eps)
    for f in range(0, n_features):
        x = tl.load(x_ptr + base + f * n_spatial + s, mask=mask, other=0.0).to(tl.float32)
        y = x * rstd + tl.sum(tl.dot(zero_tile, zero_tile))
        tl.store(y_ptr + base + f * n_spatial + s, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, BLOCK_S, num_warps, num_stages):
    n_batch, n_features = x.shape[0], x.shape[1]
    n_spatial = x.numel() // (n_batch * n_features)
    y = torch.empty_like(x)
    grid = (n_batch, triton.cdiv(n_spatial, BLOCK_S))
    rmsnorm_kernel[grid](x, y, n_features, n_spatial, 1e-5, BLOCK_S=BLOCK_S,
                         num_warps=num_warps, num_stages=num_stages)
    return y
