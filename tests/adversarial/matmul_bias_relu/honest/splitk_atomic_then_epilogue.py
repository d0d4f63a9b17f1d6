"""Split-K linear into a zeroed fp32 workspace with tl.atomic_add, then an elementwise kernel adds the bias, applies ReLU and casts."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [64], "BLOCK_N": [64], "BLOCK_K": [64], "SPLIT_K": [8], "BLOCK": [1024],
          "num_warps": [4], "num_stages": [3]}


@triton.jit
def linear_splitk(x_ptr, w_ptr, ws_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    split = tl.program_id(2)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(split * BLOCK_K, K, SPLIT_K * BLOCK_K):
        kk = k + rk
        a = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + kk[:, None] * stride_wk + rn[None, :] * stride_wn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.atomic_add(ws_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def bias_relu_cast(ws_ptr, bias_ptr, y_ptr, n_elements, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    h = tl.load(ws_ptr + offs, mask=mask, other=0.0) + tl.load(bias_ptr + offs % N, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, tl.maximum(h, 0.0).to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, weight, bias, *, BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, BLOCK, num_warps, num_stages):
    M, K = x.shape
    N = weight.shape[0]
    ws = torch.zeros((M, N), device=x.device, dtype=torch.float32)
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N), SPLIT_K)
    linear_splitk[grid](x, weight, ws, M, N, K, x.stride(0), x.stride(1), weight.stride(0), weight.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, SPLIT_K=SPLIT_K,
                        num_warps=num_warps, num_stages=num_stages)
    bias_relu_cast[(triton.cdiv(M * N, BLOCK),)](ws, bias, y, M * N, N, BLOCK=BLOCK, num_warps=num_warps,
                                                 num_stages=num_stages)
    return y
