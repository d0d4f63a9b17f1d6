"""one_pass_variance: a mean pass and a centred sum-of-squares pass fused into one pass of
shifted sums.  Results run under the Triton interpreter (trusted sources: the project's
seeds, text variants of them and the mutator's own edits)."""

from __future__ import annotations

import ast
import sys

import pytest
import torch

from kernelfoundry.mutate.ast_module import jit_functions
from tests.mutate.test_builtin_run import apply, load_module, mismatch, task
from tests.mutate.test_split_row import skip_reason


def loops(source: str, kernel: str) -> int:
    return sum(isinstance(n, ast.For) for n in ast.walk(jit_functions(ast.parse(source))[kernel]))


def seed() -> str:
    return task("layernorm").seeds[0].read_text()


def test_layernorm_seed_loses_a_pass_and_matches_reference(tmp_path):
    t = task("layernorm")
    new = apply("one_pass_variance", seed())
    assert loops(seed(), "layernorm_kernel") == 3 and loops(new, "layernorm_kernel") == 2
    assert mismatch(t, new, tmp_path, configs=2) is None
    both = apply("split_row", new)              # one stats kernel and the write kernel
    assert set(jit_functions(ast.parse(both))) == {"layernorm_kernel_part1", "layernorm_kernel"}
    assert mismatch(t, both, tmp_path, configs=2) is None


def test_rows_with_a_large_mean_and_a_small_spread_stay_as_exact_as_two_passes(tmp_path):
    """The shift keeps the cancellation small: no worse than the seed's centred pass."""
    seed_module = load_module(seed(), tmp_path)
    fused_module = load_module(apply("split_row", apply("one_pass_variance", seed())), tmp_path)
    try:
        gen = torch.Generator().manual_seed(0)
        x = 1000.0 + 1e-2 * torch.randn((3, 5, 7, 11), generator=gen)
        w, b = torch.randn((5, 7, 11), generator=gen), torch.randn((5, 7, 11), generator=gen)
        ref = torch.nn.functional.layer_norm(x.double(), w.shape, w.double(), b.double(), eps=1e-5)
        err_seed = (seed_module.launch(x, w, b, BLOCK=64, num_warps=4, num_stages=1).double() - ref).abs().max()
        out = fused_module.launch(x, w, b, BLOCK=64, SPLIT=4, num_warps=4, num_stages=1)
        assert (out.double() - ref).abs().max() <= 2 * err_seed + 1e-4
    finally:
        sys.modules.pop(seed_module.__name__, None)
        sys.modules.pop(fused_module.__name__, None)


SCALAR = (seed()
          .replace("acc = tl.zeros([BLOCK], dtype=tl.float32)", "acc = 0.0")
          .replace("acc += tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)",
                   "acc += tl.sum(tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32), axis=0)")
          .replace("mean = tl.sum(acc, axis=0) / n_cols", "mean = acc / n_cols")
          .replace("acc += d * d", "acc += tl.sum(d * d, axis=0)")
          .replace("tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)", "tl.sqrt(acc / n_cols + eps)"))


def test_scalar_accumulators(tmp_path):
    t = task("layernorm")
    assert SCALAR != seed() and mismatch(t, SCALAR, tmp_path, configs=1) is None
    new = apply("one_pass_variance", SCALAR)
    assert "d_sum += tl.sum(d, axis=0)" in new and "tl.maximum(acc - d_total * (d_total / n_cols), 0.0)" in new
    assert mismatch(t, new, tmp_path, configs=2) is None


@pytest.mark.parametrize("old,new,reason", [
    ("d = tl.where(mask, x - mean, 0.0)", "d = x - mean", "not masked"),
    ("x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)\n        d =",
     "x = tl.load(y_row + start + cols, mask=mask, other=0.0).to(tl.float32)\n        d =", "same values"),
])
def test_skips_with_a_reason(old, new, reason):
    variant = seed().replace(old, new, 1)
    assert variant != seed()
    assert reason in skip_reason("one_pass_variance", variant)
    assert "no mean pass" in skip_reason("one_pass_variance", task("softmax").seeds[0].read_text())
