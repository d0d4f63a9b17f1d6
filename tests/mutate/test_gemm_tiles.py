"""gemm_tiles: a tl.dot kernel's tile parameters jump to the fast-GEMM tile set in one edit."""

from __future__ import annotations

import pytest

from kernelfoundry.candidate import parse_param_space
from kernelfoundry.mutate.ops_base import TRACED_KERNEL_CONFIGS, kernel_space_size
from tests.mutate.test_builtin_run import apply, mismatch, task
from tests.mutate.test_split_row import skip_reason

GEMMS = ["matmul", "matmul_rect", "matmul_bias_relu", "matmul_sub_mul_relu", "gemm_sigmoid_sum_lse"]


@pytest.mark.parametrize("task_name", GEMMS)
def test_every_gemm_seed_gets_the_tile_set_and_stays_correct(task_name, tmp_path):
    t = task(task_name)
    new = apply("gemm_tiles", t.seeds[0].read_text())
    space = parse_param_space(new)
    assert space["BLOCK_M"] == [128, 64] and space["BLOCK_N"] == [256, 128] and space["BLOCK_K"] == [64, 32]
    assert space["num_warps"][:2] == [8, 4] and space["num_stages"][:2] == [4, 3]
    assert kernel_space_size(space) <= TRACED_KERNEL_CONFIGS
    assert mismatch(t, new, tmp_path, configs=2) is None        # masks hold with tiles larger than the shapes


def test_other_parameters_keep_their_values_and_the_tiles_give_way():
    """After split_k and grouped_order, SPLIT_K and GROUP_M take 6 of the 8 traced configs: the K tile
    goes first, then M, so the space stays traceable and no other parameter loses a value."""
    parent = apply("grouped_order", apply("split_k", task("matmul").seeds[0].read_text()))
    before = parse_param_space(parent)
    space = parse_param_space(apply("gemm_tiles", parent))
    assert space["SPLIT_K"] == before["SPLIT_K"] and space["GROUP_M"] == before["GROUP_M"]
    assert kernel_space_size(space) <= TRACED_KERNEL_CONFIGS
    assert space["BLOCK_M"][0] == 128 and space["BLOCK_N"][0] == 256 and space["BLOCK_K"][0] == 64


def test_skips_with_a_reason():
    assert "no tl.dot accumulator" in skip_reason("gemm_tiles", task("softmax").seeds[0].read_text())
    done = apply("gemm_tiles", task("matmul").seeds[0].read_text())
    assert "already hold the GEMM tile set" in skip_reason("gemm_tiles", done)


def test_hints_the_launch_does_not_take_are_not_added():
    source = task("matmul").seeds[0].read_text()
    bare = source.replace(', "num_warps": [4], "num_stages": [1]}', "}").replace(", num_warps, num_stages):", "):") \
        .replace(",\n                        num_warps=num_warps, num_stages=num_stages)", ")")
    assert "num_stages" not in bare and "num_warps" not in bare, "the seed's text changed: update the variant"
    space = parse_param_space(apply("gemm_tiles", bare))
    assert "num_stages" not in space and "num_warps" not in space and space["BLOCK_M"] == [128, 64]


def test_the_k_tile_is_the_innermost_loop_around_the_dot():
    """After rows_per_program an outer loop over TILES_PER_PROGRAM holds the K loop: it is not K_TILE
    (a run set TILES_PER_PROGRAM to 64 and its trace timed out)."""
    parent = apply("rows_per_program", apply("gemm_tiles", task("matmul").seeds[0].read_text()))
    before = parse_param_space(parent)
    space = parse_param_space(apply("gemm_tiles", parent.replace('"BLOCK_K": [64, 32]', '"BLOCK_K": [16]')))
    assert space["TILES_PER_PROGRAM"] == before["TILES_PER_PROGRAM"] and space["BLOCK_K"][0] == 64
