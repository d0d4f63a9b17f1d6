"""tile_columns, tile_2d and persistent: what they recognise, what they write, and that
the results match the task references in the Triton interpreter (odd shapes included)."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"   # before any kernel module is imported

import pytest
import torch

from kernelfoundry.candidate import parse_param_space
from kernelfoundry.mutate.ast_module import Skip

from tests.mutate.test_builtin_run import apply, load_module, mismatch, task

#: A column sum written differently from the seed: ``pid - b * n`` split, a scalar
#: accumulator of row-block sums, a batch stride argument.
COLUMN_SUM = '''"""Column sum with a scalar accumulator."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [32, 64], "num_warps": [4], "num_stages": [1]}


@triton.jit
def colsum_kernel(x_ptr, y_ptr, n_reduce, n_cols, stride_b, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    b = pid // n_cols
    c = pid - b * n_cols
    offs = tl.arange(0, BLOCK)
    total = 0.0
    for r in range(0, tl.cdiv(n_reduce, BLOCK)):
        idx = r * BLOCK + offs
        x = tl.load(x_ptr + b * stride_b + idx * n_cols + c, mask=idx < n_reduce, other=0.0)
        total += tl.sum(x.to(tl.float32), axis=0)
    tl.store(y_ptr + b * n_cols + c, total)


def launch(x, *, BLOCK, num_warps, num_stages):
    n_batch, n_reduce, n_cols = x.shape
    y = torch.empty((n_batch, 1, n_cols), device=x.device, dtype=x.dtype)
    grid = (n_batch * n_cols,)
    colsum_kernel[grid](x, y, n_reduce, n_cols, x.stride(0), BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
'''

#: A transpose on a 1-D grid: one row per program, looping over the row in blocks.
ROW_LOOP_TRANSPOSE = '''"""Transpose, one row per program."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_N": [32, 64], "num_warps": [4], "num_stages": [1]}


@triton.jit
def transpose_rows_kernel(x_ptr, y_ptr, M, N, BLOCK_N: tl.constexpr):
    m = tl.program_id(0)
    for start in range(0, N, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        v = tl.load(x_ptr + m * N + n, mask=n < N)
        tl.store(y_ptr + n * M + m, v, mask=n < N)


def launch(x, *, BLOCK_N, num_warps, num_stages):
    M, N = x.shape
    y = torch.empty((N, M), device=x.device, dtype=x.dtype)
    transpose_rows_kernel[(M,)](x, y, M, N, BLOCK_N=BLOCK_N, num_warps=num_warps, num_stages=num_stages)
    return y
'''


def test_tile_columns_on_the_sum_dim_seed(tmp_path):
    t = task("sum_dim")
    new = apply("tile_columns", t.seeds[0].read_text())
    assert parse_param_space(new)["BLOCK_C"] == [64, 32, 128, 256]
    assert "tl.zeros([BLOCK_R, BLOCK_C]" in new and "n_batch * triton.cdiv(n_cols, BLOCK_C)" in new
    assert "mask=col_mask)" in new                       # the store is masked at the last column block
    assert mismatch(t, new, tmp_path, configs=3) is None   # check shapes 3x37x45 and 2x130x17


def test_tile_columns_on_another_column_reduction(tmp_path):
    t = task("sum_dim")
    assert mismatch(t, COLUMN_SUM, tmp_path) is None
    new = apply("tile_columns", COLUMN_SUM)
    assert "total = tl.full([BLOCK_C], 0.0, tl.float32)" in new and "grid = (n_batch * triton.cdiv" in new
    assert mismatch(t, new, tmp_path, configs=3) is None


def test_tile_2d_on_the_transpose_seed(tmp_path):
    t = task("transpose")
    new = apply("tile_2d", t.seeds[0].read_text())
    assert parse_param_space(new)["BLOCK_M"] == [64, 32, 128]
    assert "grid = (triton.cdiv(n_rows, BLOCK_M), triton.cdiv(n_cols, BLOCK_N))" in new
    assert mismatch(t, new, tmp_path, configs=3) is None   # check shapes 7x129 and 40x65


def test_tile_2d_on_a_row_loop_transpose(tmp_path):
    t = task("transpose")
    new = apply("tile_2d", ROW_LOOP_TRANSPOSE)
    assert "triton.cdiv(M, BLOCK_M)" in new and "m_mask = m < M" in new
    assert mismatch(t, new, tmp_path, configs=2) is None


@pytest.mark.parametrize("op_name", ["tile_columns", "tile_2d"])
@pytest.mark.parametrize("task_name", ["softmax", "matmul", "layernorm", "relu", "rmsnorm"])
def test_tiling_leaves_coalesced_kernels_alone(op_name, task_name):
    """Row-wise, elementwise, dot and channel kernels add their program index scaled or are 2-D already."""
    with pytest.raises(Skip):
        apply(op_name, task(task_name).seeds[0].read_text())


def test_tile_2d_does_not_apply_twice():
    once = apply("tile_2d", task("transpose").seeds[0].read_text())
    with pytest.raises(Skip):
        apply("tile_2d", once)
    with pytest.raises(Skip):
        apply("tile_columns", apply("tile_columns", task("sum_dim").seeds[0].read_text()))


def test_persistent_grid(tmp_path):
    t = task("relu")
    new = apply("persistent", t.seeds[0].read_text())
    assert parse_param_space(new)["NUM_PROGRAMS"] == [1024, 256, 4096]
    assert "for pid in range(tl.program_id(0), n_tiles, num_programs)" in new
    assert "NUM_PROGRAMS: tl.constexpr" not in new          # a host-side value: no recompilation per value
    assert mismatch(t, new, tmp_path) is None
    with pytest.raises(Skip):
        apply("persistent", new)
    with pytest.raises(Skip):
        apply("persistent", task("matmul").seeds[0].read_text())


@pytest.mark.parametrize("task_name", ["softmax", "sum_dim"])
def test_persistent_programs_loop_over_several_tiles(task_name, tmp_path):
    """Two programs for the whole grid: every program runs several trips of the tile loop."""
    t = task(task_name)
    module = load_module(apply("persistent", t.seeds[0].read_text()), tmp_path)
    namespace: dict = {}
    exec(t.reference, namespace)
    space = parse_param_space(module.__loader__.get_data(module.__file__).decode())
    config = {k: v[0] for k, v in space.items()} | {"NUM_PROGRAMS": 2}
    gen = torch.Generator().manual_seed(0)
    for env in t.check_shapes:
        shape = t.inputs[0].concrete_shape(env)
        x = torch.randn(shape, generator=gen)
        out = module.launch(x.clone(), **config)
        assert torch.allclose(out, namespace["reference"](x), atol=t.atol, rtol=t.rtol)


def test_stacked_tiling_and_persistent_grid(tmp_path):
    t = task("sum_dim")
    source = t.seeds[0].read_text()
    tiled = apply("tile_columns", source)
    for op_name in ("persistent", "rows_per_program"):
        assert mismatch(t, apply(op_name, tiled), tmp_path, configs=2) is None
    # stacking the two would only repeat what a smaller NUM_PROGRAMS does, in nested loops the trace runs
    with pytest.raises(Skip, match="is persistent"):
        apply("rows_per_program", apply("persistent", tiled))
    with pytest.raises(Skip, match="already coarsened"):
        apply("persistent", apply("rows_per_program", tiled))
