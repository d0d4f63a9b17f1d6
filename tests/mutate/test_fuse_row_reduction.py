"""fuse_row_reduction: a row-sum epilogue moved into its tiled GEMM producer as per-tile
partial sums.  What it applies to and refuses (static); its results match the reference
under the Triton interpreter; and, on a tuned gemm_sigmoid_sum_lse parent, the child passes
every verifier gate and the model scores it above the unfused parent."""

from __future__ import annotations

import ast

import pytest

from kernelfoundry.candidate import parse_param_space
from kernelfoundry.evaluate.pipeline import verify
from kernelfoundry.mutate.ast_module import Skip, jit_functions
from test_builtin_run import apply, mismatch, task   # also sets TRITON_INTERPRET before triton loads
from test_ops_gemm import launched, seed, with_values

TASK = "gemm_sigmoid_sum_lse"
CONSUMER_LOOP = """    for start in range(0, N, BLOCK):
        mask = start + cols < N
        h = tl.load(h_ptr + row * N + start + cols, mask=mask, other=0.0)
        acc += tl.where(mask, 1.0 / (1.0 + tl.exp(-h)), 0.0)
"""


def fuse(source: str) -> str:
    return apply("fuse_row_reduction", source)


def consumer_variant(loop: str, *, init: str | None = None, store: str | None = None) -> str:
    """The seed with the row-sum kernel's loop (and optionally its init and store) replaced."""
    source = seed(TASK)
    assert CONSUMER_LOOP in source
    source = source.replace(CONSUMER_LOOP, loop)
    if init is not None:
        source = source.replace("    acc = tl.zeros([BLOCK], dtype=tl.float32)\n    for start in range(0, N",
                                f"    {init}\n    for start in range(0, N")
    if store is not None:
        source = source.replace("    tl.store(s_ptr + row, tl.sum(acc, axis=0))", f"    {store}")
    return source


def tuned_parent() -> str:
    """The seed with grouped order and GEMM tiles the model likes (what a search reaches first)."""
    return with_values(apply("grouped_order", seed(TASK)), BLOCK_M=[128, 64], BLOCK_N=[128, 64], BLOCK_K=[32],
                       GROUP_M=[8], num_warps=[8, 4], num_stages=[3, 4])


def test_seed_loses_its_intermediate_and_matches(tmp_path):
    new = fuse(seed(TASK))
    tree = ast.parse(new)
    assert launched(new) == ["linear_kernel", "sigmoid_row_sum_kernel", "logsumexp_kernel"]
    assert "torch.empty((M, N)" not in new and "torch.empty((M, triton.cdiv(N, BLOCK_N))" in new
    producer = ast.unparse(jit_functions(tree)["linear_kernel"])
    assert "tl.exp(-h)" in producer and "axis=1" in producer and "atomic" not in new
    consumer = ast.unparse(jit_functions(tree)["sigmoid_row_sum_kernel"])
    assert "tl.exp" not in consumer and "range(0, n_parts, BLOCK)" in consumer
    assert parse_param_space(new) == parse_param_space(seed(TASK))
    assert mismatch(task(TASK), new, tmp_path) is None


def test_scalar_accumulator_and_odd_tiles_match(tmp_path):
    """``acc += tl.sum(..., axis=0)`` on a scalar, and tiles that leave a ragged last column tile."""
    source = consumer_variant(CONSUMER_LOOP.replace("acc += tl.where(mask, 1.0 / (1.0 + tl.exp(-h)), 0.0)",
                                                    "y = 1.0 / (1.0 + tl.exp(-h))\n"
                                                    "        acc += tl.sum(tl.where(mask, y, 0.0), axis=0)"),
                              init="acc = 0.0", store="tl.store(s_ptr + row, acc)")
    new = fuse(source)
    assert "tl.sum(h, axis=0)" in new
    assert mismatch(task(TASK), with_values(new, BLOCK_N=[32, 64], BLOCK=[16]), tmp_path) is None


def test_after_grouped_order_and_bigger_tiles(tmp_path):
    new = fuse(tuned_parent())
    assert "+ pid_n, partial" in new                                  # partial column = the tile index
    assert mismatch(task(TASK), with_values(new, BLOCK_M=[16], BLOCK_N=[16], BLOCK_K=[16]), tmp_path) is None
    with pytest.raises(Skip, match="broadcast|fewer than two|share"):
        fuse(new)                                                     # nothing left to fuse


def test_refuses_elementwise_epilogues_and_other_patterns():
    with pytest.raises(Skip, match="not launched with one program per row"):
        fuse(seed("matmul_bias_relu"))                                # elementwise: fuse_epilogue's case
    with pytest.raises(Skip, match="fewer than two"):
        fuse(seed("matmul"))
    twice = CONSUMER_LOOP + "        acc += tl.load(h_ptr + row * N + start + cols, mask=mask, other=0.0)\n"
    with pytest.raises(Skip, match="more than once"):
        fuse(consumer_variant(twice))
    with pytest.raises(Skip, match="reads cols"):
        fuse(consumer_variant(CONSUMER_LOOP.replace("tl.exp(-h)", "tl.exp(-h * cols)")))
    with pytest.raises(Skip, match="other than as tl.sum"):
        fuse(consumer_variant(CONSUMER_LOOP, store="tl.store(s_ptr + row, tl.max(acc, axis=0))"))
    with pytest.raises(Skip, match="start \\+ tl.arange\\(0, BLOCK\\)"):                  # strided: half the row
        fuse(consumer_variant(CONSUMER_LOOP.replace("range(0, N, BLOCK)", "range(0, N, 2 * BLOCK)")))
    with pytest.raises(Skip, match="beyond"):
        fuse(seed(TASK).replace("    return out\n", "    return out, h\n"))


def test_child_passes_the_verifier_and_beats_the_unfused_parent():
    t = task(TASK)
    parent = tuned_parent()
    child = fuse(parent)
    before, after = verify(t, parent), verify(t, child)
    assert before.passed, before.reason
    assert after.passed, after.reason
    assert [g.name for g in after.gates if g.passed][:4] == ["hack", "load", "correctness", "trace"]
    assert after.objective > 1.1 * before.objective                 # measured 4.45 -> 5.25
    for hw in t.hardware:
        assert after.hardware[hw].latency_s < 0.95 * before.hardware[hw].latency_s
