"""LayerNorm split across programs: per-chunk Welford (count, mean, M2) partials, a per-sample Chan merge, then a (sample, chunk) normalising kernel."""
import torch
import triton
import triton.language as tl

PARAMS = {"CHUNK": [8192], "BLOCK": [1024], "BLOCK_P": [64], "num_warps": [4], "num_stages": [1]}


@triton.jit
def chunk_stats(x_ptr, mean_ptr, m2_ptr, cnt_ptr, n_cols, n_chunks, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    cols = tl.arange(0, BLOCK)
    first = chunk * CHUNK
    total = tl.zeros([BLOCK], dtype=tl.float32)
    cnt = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, CHUNK, BLOCK):
        idx = first + off + cols
        mask = idx < n_cols
        total += tl.load(x_ptr + row * n_cols + idx, mask=mask, other=0.0).to(tl.float32)
        cnt += tl.where(mask, 1.0, 0.0)
    n = tl.sum(cnt, axis=0)
    mean = tl.sum(total, axis=0) / n
    sq = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, CHUNK, BLOCK):
        idx = first + off + cols
        mask = idx < n_cols
        d = tl.where(mask, tl.load(x_ptr + row * n_cols + idx, mask=mask, other=0.0).to(tl.float32) - mean, 0.0)
        sq += d * d
    tl.store(mean_ptr + row * n_chunks + chunk, mean)
    tl.store(m2_ptr + row * n_chunks + chunk, tl.sum(sq, axis=0))
    tl.store(cnt_ptr + row * n_chunks + chunk, n)


@triton.jit
def merge_stats(mean_ptr, m2_ptr, cnt_ptr, stats_ptr, n_chunks, eps, BLOCK_P: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    p = tl.arange(0, BLOCK_P)
    wsum = tl.zeros([BLOCK_P], dtype=tl.float32)
    csum = tl.zeros([BLOCK_P], dtype=tl.float32)
    for start in range(0, n_chunks, BLOCK_P):
        mask = start + p < n_chunks
        c = tl.load(cnt_ptr + row * n_chunks + start + p, mask=mask, other=0.0)
        wsum += c * tl.load(mean_ptr + row * n_chunks + start + p, mask=mask, other=0.0)
        csum += c
    total = tl.sum(csum, axis=0)
    mean = tl.sum(wsum, axis=0) / total
    m2 = tl.zeros([BLOCK_P], dtype=tl.float32)
    for start in range(0, n_chunks, BLOCK_P):
        mask = start + p < n_chunks
        c = tl.load(cnt_ptr + row * n_chunks + start + p, mask=mask, other=0.0)
        d = tl.load(mean_ptr + row * n_chunks + start + p, mask=mask, other=0.0) - mean
        m2 += tl.load(m2_ptr + row * n_chunks + start + p, mask=mask, other=0.0) + c * d * d
    tl.store(stats_ptr + row * 2, mean)
    tl.store(stats_ptr + row * 2 + 1, 1.0 / tl.sqrt(tl.sum(m2, axis=0) / total + eps))


@triton.jit
def normalise(x_ptr, w_ptr, b_ptr, y_ptr, stats_ptr, n_cols, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    first = tl.program_id(1) * CHUNK
    cols = tl.arange(0, BLOCK)
    mean = tl.load(stats_ptr + row * 2)
    rstd = tl.load(stats_ptr + row * 2 + 1)
    for off in range(0, CHUNK, BLOCK):
        idx = first + off + cols
        mask = idx < n_cols
        x = tl.load(x_ptr + row * n_cols + idx, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + idx, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + idx, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n_cols + idx, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, weight, bias, *, CHUNK, BLOCK, BLOCK_P, num_warps, num_stages):
    n_rows = x.shape[0]
    n_cols = weight.numel()
    n_chunks = triton.cdiv(n_cols, CHUNK)
    y = torch.empty_like(x)
    mean = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
    m2 = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
    cnt = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
    stats = torch.empty((n_rows, 2), device=x.device, dtype=torch.float32)
    chunk_stats[(n_rows, n_chunks)](x, mean, m2, cnt, n_cols, n_chunks, CHUNK=CHUNK, BLOCK=BLOCK,
                                    num_warps=num_warps, num_stages=num_stages)
    merge_stats[(n_rows,)](mean, m2, cnt, stats, n_chunks, 1e-5, BLOCK_P=BLOCK_P, num_warps=num_warps,
                           num_stages=num_stages)
    normalise[(n_rows, n_chunks)](x, weight, bias, y, stats, n_cols, CHUNK=CHUNK, BLOCK=BLOCK,
                                  num_warps=num_warps, num_stages=num_stages)
    return y
