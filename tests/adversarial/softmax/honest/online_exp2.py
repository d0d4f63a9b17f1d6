"""Online softmax in the base-2 domain: inputs pre-scaled by log2(e), exp2 for every exponential."""
import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
PARAMS = {"BLOCK_N": [1024], "num_warps": [4, 8], "num_stages": [1]}


@triton.jit
def softmax_exp2(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    m = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf")).to(tl.float32) * LOG2E
        m_new = tl.maximum(m, x)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp2(m - m_safe) + tl.exp2(x - m_safe)
        m = m_new
    row_max = tl.max(m, axis=0)
    inv = 1.0 / tl.sum(s * tl.exp2(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * stride_x + start + cols, mask=mask, other=float("-inf")).to(tl.float32) * LOG2E
        tl.store(y_ptr + row * stride_y + start + cols, (tl.exp2(x - row_max) * inv).to(y_ptr.dtype.element_ty),
                 mask=mask)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_exp2[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N,
                            num_warps=num_warps, num_stages=num_stages)
    return y
