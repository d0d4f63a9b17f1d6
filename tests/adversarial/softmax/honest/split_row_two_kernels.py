"""Split-row softmax: programs over (row, chunk) write per-chunk (max, sum) partials, then a second kernel merges them and normalises its chunk."""
import torch
import triton
import triton.language as tl

PARAMS = {"CHUNK": [4096], "BLOCK_N": [1024], "BLOCK_P": [64], "num_warps": [4], "num_stages": [1]}


@triton.jit
def chunk_stats(x_ptr, m_ptr, s_ptr, n_cols, n_chunks, stride_x, CHUNK: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    cols = tl.arange(0, BLOCK_N)
    first = chunk * CHUNK
    m = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, CHUNK, BLOCK_N):
        idx = first + off + cols
        x = tl.load(x_ptr + row * stride_x + idx, mask=idx < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)
        m = m_new
    cm = tl.max(m, axis=0)
    cs = tl.sum(s * tl.exp(m - cm), axis=0)
    tl.store(m_ptr + row * n_chunks + chunk, cm)
    tl.store(s_ptr + row * n_chunks + chunk, cs)


@triton.jit
def normalise(x_ptr, y_ptr, m_ptr, s_ptr, n_cols, n_chunks, stride_x, stride_y,
              CHUNK: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_P: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    p = tl.arange(0, BLOCK_P)
    gm = tl.full([BLOCK_P], float("-inf"), dtype=tl.float32)
    for start in range(0, n_chunks, BLOCK_P):
        pm = tl.load(m_ptr + row * n_chunks + start + p, mask=start + p < n_chunks, other=float("-inf"))
        gm = tl.maximum(gm, pm)
    row_max = tl.max(gm, axis=0)
    acc = tl.zeros([BLOCK_P], dtype=tl.float32)
    for start in range(0, n_chunks, BLOCK_P):
        pmask = start + p < n_chunks
        pm = tl.load(m_ptr + row * n_chunks + start + p, mask=pmask, other=float("-inf"))
        ps = tl.load(s_ptr + row * n_chunks + start + p, mask=pmask, other=0.0)
        acc += tl.where(pmask, ps * tl.exp(pm - row_max), 0.0)
    inv = 1.0 / tl.sum(acc, axis=0)
    cols = tl.arange(0, BLOCK_N)
    first = chunk * CHUNK
    for off in range(0, CHUNK, BLOCK_N):
        idx = first + off + cols
        mask = idx < n_cols
        x = tl.load(x_ptr + row * stride_x + idx, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(y_ptr + row * stride_y + idx, (tl.exp(x - row_max) * inv).to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, CHUNK, BLOCK_N, BLOCK_P, num_warps, num_stages):
    n_rows, n_cols = x.shape
    n_chunks = triton.cdiv(n_cols, CHUNK)
    y = torch.empty_like(x)
    m = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
    s = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
    grid = (n_rows, n_chunks)
    chunk_stats[grid](x, m, s, n_cols, n_chunks, x.stride(0), CHUNK=CHUNK, BLOCK_N=BLOCK_N,
                      num_warps=num_warps, num_stages=num_stages)
    normalise[grid](x, y, m, s, n_cols, n_chunks, x.stride(0), y.stride(0), CHUNK=CHUNK, BLOCK_N=BLOCK_N,
                    BLOCK_P=BLOCK_P, num_warps=num_warps, num_stages=num_stages)
    return y
