"""Static stream-K: the M x N x K iteration space is cut into equal contiguous ranges, one per program (no counter); partial tiles are atomically added in fp32, then cast."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [64], "BLOCK_N": [64], "BLOCK_K": [64], "NUM_SMS": [132], "BLOCK": [1024],
          "num_warps": [4], "num_stages": [3]}


@triton.jit
def matmul_stream_k(a_ptr, b_ptr, ws_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_iters = tl.cdiv(K, BLOCK_K)
    total = tl.cdiv(M, BLOCK_M) * num_pid_n * k_iters
    per_program = tl.cdiv(total, tl.num_programs(0))
    it = tl.program_id(0) * per_program
    end = tl.minimum(it + per_program, total)
    rk = tl.arange(0, BLOCK_K)
    while it < end:
        tile = it // k_iters
        k_begin = it % k_iters
        k_end = tl.minimum(k_iters, k_begin + (end - it))
        rm = (tile // num_pid_n) * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = (tile % num_pid_n) * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_begin, k_end):
            kk = kt * BLOCK_K + rk
            a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                        mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                        mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.atomic_add(ws_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
        it += k_end - k_begin


@triton.jit
def cast_out(ws_ptr, c_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(c_ptr + offs, tl.load(ws_ptr + offs, mask=mask, other=0.0).to(c_ptr.dtype.element_ty), mask=mask)


def launch(a, b, *, BLOCK_M, BLOCK_N, BLOCK_K, NUM_SMS, BLOCK, num_warps, num_stages):
    M, K = a.shape
    N = b.shape[1]
    ws = torch.zeros((M, N), device=a.device, dtype=torch.float32)
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    total = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N) * triton.cdiv(K, BLOCK_K)
    matmul_stream_k[(min(NUM_SMS, total),)](a, b, ws, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                            num_warps=num_warps, num_stages=num_stages)
    cast_out[(triton.cdiv(M * N, BLOCK),)](ws, c, M * N, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return c
