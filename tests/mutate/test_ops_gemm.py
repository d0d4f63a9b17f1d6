"""GEMM structural operators: ``fuse_epilogue`` and ``split_k``.  What they apply to and
what they refuse (static), and that their results match the task references under the
Triton interpreter at the tasks' odd check shapes (M=17/33, N=65/70, K=17/37/...)."""

from __future__ import annotations

import ast
import random

import pytest

from kernelfoundry.candidate import parse_param_space
from kernelfoundry.mutate.ast_module import KernelModule, Skip, jit_functions, kernel_launches, write_params
from kernelfoundry.mutate.base import ParentView
from kernelfoundry.mutate.ops_base import OpContext, kernel_space_size
from test_builtin_run import OPS, apply, mismatch, task   # also sets TRITON_INTERPRET before triton loads


def seed(name: str) -> str:
    return task(name).seeds[0].read_text()


def with_values(source: str, **values: list) -> str:
    """*source* with some PARAMS lists replaced (to check a chosen config)."""
    module = KernelModule.parse(source)
    tree = module.clone()
    space = parse_param_space(source)
    space.update(values)
    write_params(tree, space)
    return module.render(tree)


def launched(source: str) -> list[str]:
    return [name for _, name in kernel_launches(ast.parse(source))]


# ----------------------------------------------------------------------------- fuse_epilogue

@pytest.mark.parametrize("task_name,epilogue", [("matmul_bias_relu", "bias_relu_kernel"),
                                                ("matmul_sub_mul_relu", "epilogue_kernel")])
def test_fused_epilogue_replaces_the_intermediate_and_matches(task_name, epilogue, tmp_path):
    new = apply("fuse_epilogue", seed(task_name))
    assert epilogue not in jit_functions(ast.parse(new))
    assert launched(new) == ["matmul_kernel"]
    assert "torch.float32" not in new and "c_ptr" not in new        # the fp32 intermediate is gone
    assert "BLOCK" not in parse_param_space(new)                     # only the epilogue used it
    assert "rn[None, :]" in new and "% N" not in new                 # bias indexed by the tile's columns
    assert mismatch(task(task_name), new, tmp_path) is None


def test_fuse_epilogue_after_grouped_order_and_bigger_tiles(tmp_path):
    t = task("matmul_bias_relu")
    source = apply("grow_block", apply("grouped_order", seed("matmul_bias_relu")))
    new = apply("fuse_epilogue", source)
    assert "GROUP_M" in parse_param_space(new) and launched(new) == ["matmul_kernel"]
    assert mismatch(t, new, tmp_path) is None


def test_fuse_epilogue_refuses_reductions_and_single_kernels():
    with pytest.raises(Skip, match="not elementwise"):
        apply("fuse_epilogue", seed("gemm_sigmoid_sum_lse"))
    with pytest.raises(Skip, match="fewer than two"):
        apply("fuse_epilogue", seed("matmul"))


def test_fuse_epilogue_refuses_an_intermediate_read_elsewhere():
    source = seed("matmul_bias_relu").replace("    return y\n", "    return y, c\n")
    with pytest.raises(Skip, match="beyond"):
        apply("fuse_epilogue", source)


# ----------------------------------------------------------------------------- split_k

def test_split_k_space_keeps_the_unsplit_default():
    new = apply("split_k", seed("matmul"))
    space = parse_param_space(new)
    assert space["SPLIT_K"][0] == 1 and len(space["SPLIT_K"]) >= 2
    assert kernel_space_size(space) <= 8                             # every config is traced
    assert launched(new) == ["matmul_kernel", "matmul_kernel_split_k", "matmul_kernel_split_k"]
    with pytest.raises(Skip, match="already split"):
        apply("split_k", new)


def test_split_k_refuses_kernels_without_a_dot_loop():
    with pytest.raises(Skip, match="K loop"):
        apply("split_k", seed("softmax"))
    with pytest.raises(Skip, match="K loop"):                        # the loop is nested in a coarsening loop
        apply("split_k", apply("rows_per_program", seed("matmul")))


@pytest.mark.parametrize("task_name,fuse,splits", [
    ("matmul", False, [4]), ("matmul_rect", False, [8]),            # K=136 / 33: empty and short splits
    ("matmul_bias_relu", True, [2]),                                # epilogue runs after the full sum
    ("gemm_sigmoid_sum_lse", False, [4]),                           # bias add after the K loop (fp32)
])
def test_split_k_matches_reference(task_name, fuse, splits, tmp_path):
    source = seed(task_name)
    if fuse:
        source = apply("fuse_epilogue", source)
    new = apply("split_k", source)
    assert mismatch(task(task_name), with_values(new, SPLIT_K=splits), tmp_path) is None


def test_split_k_then_grouped_order_on_the_split_kernel(tmp_path):
    """Both phases share the program-to-tile map, so remapping it keeps them consistent."""
    split = apply("split_k", seed("matmul"))
    module = KernelModule.parse(split)
    for rng_seed in range(20):
        edit = OPS["grouped_order"].apply(OpContext(module=module, rng=random.Random(rng_seed),
                                                    parent=ParentView(id=1, source=split)))
        if "matmul_kernel_split_k" in edit.description:
            break
    else:
        pytest.fail("grouped_order never chose the split kernel")
    new = module.render(edit.tree)
    assert mismatch(task("matmul"), with_values(new, SPLIT_K=[4], GROUP_M=[4]), tmp_path) is None
