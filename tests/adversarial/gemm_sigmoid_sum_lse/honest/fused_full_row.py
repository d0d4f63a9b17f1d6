"""Deterministic fusion: each program owns BLOCK_M rows and loops over every N tile (GEMM, bias, sigmoid, row sum in registers), stores the row sums; then partial logsumexps per block and a final merge."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [32], "BLOCK_N": [64], "BLOCK_K": [32], "BLOCK": [256], "num_warps": [4], "num_stages": [3]}


@triton.jit
def linear_sigmoid_rows(x_ptr, w_ptr, bias_ptr, s_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rk = tl.arange(0, BLOCK_K)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    for n in range(0, N, BLOCK_N):
        rn = n + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            kk = k + rk
            a = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
                        mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
            w = tl.load(w_ptr + rn[:, None] * stride_wn + kk[None, :] * stride_wk,
                        mask=(rn[:, None] < N) & (kk[None, :] < K), other=0.0)
            acc = tl.dot(a, tl.trans(w), acc, input_precision="ieee")
        bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
        h = 1.0 / (1.0 + tl.exp(-(acc + bias[None, :])))
        row_sum += tl.sum(tl.where(rn[None, :] < N, h, 0.0), axis=1)
    tl.store(s_ptr + rm, row_sum, mask=rm < M)


@triton.jit
def lse_partials(s_ptr, pm_ptr, ps_ptr, M, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(s_ptr + offs, mask=offs < M, other=float("-inf"))
    m = tl.max(v, axis=0)
    tl.store(pm_ptr + tl.program_id(0), m)
    tl.store(ps_ptr + tl.program_id(0), tl.sum(tl.exp(v - m), axis=0))


@triton.jit
def lse_merge(pm_ptr, ps_ptr, out_ptr, n_parts, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    gm = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_parts, BLOCK):
        gm = tl.maximum(gm, tl.load(pm_ptr + start + offs, mask=start + offs < n_parts, other=float("-inf")))
    m = tl.max(gm, axis=0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_parts, BLOCK):
        mask = start + offs < n_parts
        pm = tl.load(pm_ptr + start + offs, mask=mask, other=float("-inf"))
        ps = tl.load(ps_ptr + start + offs, mask=mask, other=0.0)
        acc += tl.where(mask, ps * tl.exp(pm - m), 0.0)
    tl.store(out_ptr, m + tl.log(tl.sum(acc, axis=0)))


def launch(x, weight, bias, *, BLOCK_M, BLOCK_N, BLOCK_K, BLOCK, num_warps, num_stages):
    M, K = x.shape
    N = weight.shape[0]
    n_parts = triton.cdiv(M, BLOCK)
    s = torch.empty((M,), device=x.device, dtype=torch.float32)
    pm = torch.empty((n_parts,), device=x.device, dtype=torch.float32)
    ps = torch.empty((n_parts,), device=x.device, dtype=torch.float32)
    out = torch.empty((), device=x.device, dtype=x.dtype)
    linear_sigmoid_rows[(triton.cdiv(M, BLOCK_M),)](x, weight, bias, s, M, N, K, x.stride(0), x.stride(1),
                                                    weight.stride(0), weight.stride(1), BLOCK_M=BLOCK_M,
                                                    BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                                    num_warps=num_warps, num_stages=num_stages)
    lse_partials[(n_parts,)](s, pm, ps, M, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    lse_merge[(1,)](pm, ps, out, n_parts, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return out
