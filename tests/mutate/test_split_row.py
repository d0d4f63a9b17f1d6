"""split_row: reduction passes of a one-program-per-row kernel split over SPLIT programs
per row.  Results run under the Triton interpreter against the task reference (trusted
sources: the project's seeds and the mutator's own edits)."""

from __future__ import annotations

import ast
import random

import pytest

from kernelfoundry.candidate import parse_param_space
from kernelfoundry.mutate.ast_module import KernelModule, Skip, jit_functions, kernel_launches
from kernelfoundry.mutate.base import ParentView
from kernelfoundry.mutate.ops_base import OpContext, check_space
from tests.mutate.test_builtin_run import OPS, apply, mismatch, task


def split(source: str) -> str:
    return apply("split_row", source)


def skip_reason(op_name: str, source: str) -> str:
    module = KernelModule.parse(source)
    with pytest.raises(Skip) as info:
        OPS[op_name].apply(OpContext(module=module, rng=random.Random(0), parent=ParentView(id=1, source=source)))
    return str(info.value)


def test_layernorm_seed_becomes_three_kernels_and_matches_reference(tmp_path):
    t = task("layernorm")
    new = split(t.seeds[0].read_text())
    tree = ast.parse(new)
    assert set(jit_functions(tree)) == {"layernorm_kernel_part1", "layernorm_kernel_part2", "layernorm_kernel"}
    assert [name for _, name in kernel_launches(tree)] == ["layernorm_kernel_part1", "layernorm_kernel_part2",
                                                          "layernorm_kernel"]
    space = parse_param_space(new)
    check_space(space)
    assert space["SPLIT"] == [8, 4, 16, 32] and space["BLOCK"] == [4096, 2048]
    assert new.count("torch.empty((n_rows * SPLIT,)") == 2 and "atomic" not in new
    assert mismatch(t, new, tmp_path, configs=2) is None


def test_max_and_sum_passes_and_a_tail_without_write_loop(tmp_path):
    t = task("cross_entropy")
    new = split(t.seeds[0].read_text())
    assert "tl.max(tl.load(row_max_partials" in new and "tl.sum(tl.load(row_sum_partials" in new
    assert "row_loss_kernel[(n_rows,)]" in new.replace(" ", "")      # one program per row at the end
    assert mismatch(t, new, tmp_path, configs=1) is None


def test_interplay_with_whole_row_and_rows_per_program(tmp_path):
    t = task("layernorm")
    seed = t.seeds[0].read_text()
    both = split(apply("whole_row", seed))           # the looping branch of the dispatch is split
    assert "layernorm_kernel_row[" in both and "layernorm_kernel_part1[" in both
    assert mismatch(t, both, tmp_path, configs=1) is None
    stacked = apply("grow_block", apply("rows_per_program", split(seed)))
    assert mismatch(t, stacked, tmp_path, configs=2) is None
    assert "not at its top level" in skip_reason("split_row", apply("rows_per_program", seed))
    assert "no block loops" in skip_reason("whole_row", split(seed))


#: Scalar accumulators in ``range(tl.cdiv(N, BLOCK))`` loops, a min accumulator, and a
#: statistics store outside the loops (which only split 0 may make).
SCALAR_LAYERNORM = '''"""LayerNorm with block-index loops, a scalar sum, a min accumulator and stored means."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [64, 128], "num_warps": [4], "num_stages": [1]}


@triton.jit
def ln_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    total = 0.0
    for i in range(tl.cdiv(n_cols, BLOCK)):
        offs = i * BLOCK + cols
        total += tl.sum(tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0), axis=0)
    mean = total / n_cols
    tl.store(mean_ptr + row, mean)
    sq = tl.zeros([BLOCK], dtype=tl.float32)
    low = tl.full([BLOCK], float("inf"), dtype=tl.float32)
    for i in range(tl.cdiv(n_cols, BLOCK)):
        offs = i * BLOCK + cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
        d = tl.where(offs < n_cols, x - mean, 0.0)
        sq += d * d
        low = tl.minimum(low, tl.where(offs < n_cols, x, float("inf")))
    rstd = 1.0 / tl.sqrt(tl.sum(sq, axis=0) / n_cols + eps)
    shift = tl.minimum(tl.min(low, axis=0), 0.0) * 0.0
    for i in range(tl.cdiv(n_cols, BLOCK)):
        offs = i * BLOCK + cols
        mask = offs < n_cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        tl.store(y_ptr + row * n_cols + offs, (x - mean) * rstd * w + b + shift, mask=mask)


def launch(x, weight, bias, *, BLOCK, num_warps, num_stages):
    n_rows = x.shape[0]
    n_cols = weight.numel()
    y = torch.empty_like(x)
    means = torch.empty((n_rows,), device=x.device, dtype=torch.float32)
    ln_kernel[(n_rows,)](x, weight, bias, y, means, n_cols, eps=1e-5, BLOCK=BLOCK,
                         num_warps=num_warps, num_stages=num_stages)
    return y
'''


def test_scalar_and_min_accumulators_and_guarded_stores(tmp_path):
    t = task("layernorm")
    assert mismatch(t, SCALAR_LAYERNORM, tmp_path, configs=1) is None
    new = split(SCALAR_LAYERNORM)
    final = jit_functions(ast.parse(new))["ln_kernel"]
    text = ast.unparse(final)
    assert "if split_id == 0:\n        tl.store(mean_ptr + row, mean)" in text
    assert "total = tl.sum(tl.load(total_partials" in text and "tl.min(tl.load(low_partials" in text
    assert "range(block_lo, block_hi)" in text
    parts = [ast.unparse(f) for n, f in jit_functions(ast.parse(new)).items() if n != "ln_kernel"]
    assert len(parts) == 2 and not any("tl.store(mean_ptr" in p for p in parts)
    assert mismatch(t, new, tmp_path, configs=3) is None


@pytest.mark.parametrize("task_name,source_op,reason", [
    ("cumsum", None, "a scan"),
    ("rmsnorm", None, "tl.program_id(0)"),
    ("matmul", None, "uses tl.dot"),
    ("softmax", "online_softmax", "online softmax"),
    ("layernorm", "split_row", "no top-level block loops"),
])
def test_split_row_skips_with_a_reason(task_name, source_op, reason):
    source = task(task_name).seeds[0].read_text()
    if source_op:
        source = apply(source_op, source)
    assert reason in skip_reason("split_row", source)


def test_split_values_trimmed_to_the_traced_space_keep_the_largest():
    grown = apply("grow_block", apply("grow_block", task("layernorm").seeds[0].read_text()))
    space = parse_param_space(split(grown))
    assert len(space["BLOCK"]) == 4 and space["SPLIT"] == [8, 32]
