"""Fused linear + bias + sigmoid with per-tile row sums tl.atomic_add-ed into a zeroed vector, then a single-pass online logsumexp kernel."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [64], "BLOCK_N": [64], "BLOCK_K": [32], "BLOCK": [1024], "num_warps": [4], "num_stages": [3]}


@triton.jit
def linear_sigmoid_rowsum(x_ptr, w_ptr, bias_ptr, s_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        kk = k + rk
        a = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + kk[:, None] * stride_wk + rn[None, :] * stride_wn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    h = tl.sigmoid(acc + bias[None, :])
    h = tl.where(rn[None, :] < N, h, 0.0)
    tl.atomic_add(s_ptr + rm, tl.sum(h, axis=1), mask=rm < M)


@triton.jit
def logsumexp_online(s_ptr, out_ptr, M, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, M, BLOCK):
        v = tl.load(s_ptr + start + offs, mask=start + offs < M, other=float("-inf"))
        m_new = tl.maximum(m, v)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        acc = acc * tl.exp(m - m_safe) + tl.exp(v - m_safe)
        m = m_new
    gm = tl.max(m, axis=0)
    tl.store(out_ptr, gm + tl.log(tl.sum(acc * tl.exp(m - gm), axis=0)))


def launch(x, weight, bias, *, BLOCK_M, BLOCK_N, BLOCK_K, BLOCK, num_warps, num_stages):
    M, K = x.shape
    N = weight.shape[0]
    s = torch.zeros((M,), device=x.device, dtype=torch.float32)
    out = torch.empty((), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    linear_sigmoid_rowsum[grid](x, weight, bias, s, M, N, K, x.stride(0), x.stride(1), weight.stride(0),
                                weight.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                num_warps=num_warps, num_stages=num_stages)
    logsumexp_online[(1,)](s, out, M, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return out
