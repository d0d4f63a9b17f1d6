"""Generated convolution seeds (``kernelfoundry/kernelbench/seed_conv.py``): 1D/2D/3D, plain and
transposed, stride/padding/dilation/output padding, groups (depthwise), bias or none, checked
against PyTorch under Triton's interpreter at the traced shapes and at a third shape; and the
``fuse_epilogue`` operator moving a generated epilogue into the convolution kernel.

The fast tests trace small references in-process (``make_fx`` at two shapes, as the import job
does) and call the seed generator directly; the slow ones import shared KernelBench files."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import random
import sys

import pytest
import torch
import torch.nn.functional as F

from kernelfoundry import REPO_DIR
from kernelfoundry.kernelbench.graph import trace
from kernelfoundry.kernelbench.noseed import NoSeed
from kernelfoundry.kernelbench.reference import sizes_of
from kernelfoundry.kernelbench.seedgen import generate

SHARED = REPO_DIR.parent / "shared" / "kernelbench"
_counter = itertools.count()


def concrete(shape, env):
    return [env[d] if isinstance(d, str) else d for d in shape]


def make_seed(fn, specs, envs):
    """The generated seed of *fn* traced at the two *envs*; *specs*: [(name, shape with symbols)]."""
    inputs = [{"name": name, "shape": list(shape), "dtype": "float32", "role": "input"} for name, shape in specs]
    torch.manual_seed(0)
    graphs = [trace(fn, [torch.randn(concrete(s, env)) for _, s in specs]) for env in envs]
    return generate(graphs, [dict(e) for e in envs], inputs, sizes_of(dict(envs[0]), inputs))


def load(source, tmp_path):
    name = f"conv_seed_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def default_config(module):
    return {k: v[0] for k, v in module.PARAMS.items()}


def assert_matches(source, fn, specs, envs, tmp_path, config=None):
    module = load(source, tmp_path)
    try:
        gen = torch.Generator().manual_seed(1)
        for env in envs:
            args = [torch.randn(concrete(s, env), generator=gen) for _, s in specs]
            out = module.launch(*args, **(config or default_config(module)))
            ref = fn(*args)
            assert out.shape == ref.shape and out.dtype == ref.dtype, (out.shape, ref.shape)
            torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    finally:
        sys.modules.pop(module.__name__, None)


def kernels_of(source):
    tree = ast.parse(source)
    return [f.name for f in tree.body if isinstance(f, ast.FunctionDef)
            and any("jit" in ast.unparse(d) for d in f.decorator_list)]


CASES = {
    # name: (reference, input specs, the two traced shapes, a third shape)
    "conv1d_stride_pad_dilation_bias": (
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2),
        [("x", (2, 3, "L")), ("w", (5, 3, 3)), ("b", (5,))],
        [{"L": 13}, {"L": 22}], {"L": 17}),
    "conv2d_groups_asymmetric_no_bias": (
        lambda x, w: F.conv2d(x, w, None, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
        [("x", ("N", 4, "H", 7)), ("w", (6, 2, 3, 2))],
        [{"N": 2, "H": 9}, {"N": 3, "H": 12}], {"N": 1, "H": 5}),
    "depthwise_conv2d": (
        lambda x, w: F.conv2d(x, w, None, padding=1, groups=x.shape[1]),
        [("x", (2, "C", 6, 5)), ("w", ("C", 1, 3, 3))],
        [{"C": 3}, {"C": 5}], {"C": 4}),
    "conv3d_bias": (
        lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=(0, 1, 1)),
        [("x", (1, 2, "D", 5, 4)), ("w", (3, 2, 2, 3, 2)), ("b", (3,))],
        [{"D": 4}, {"D": 6}], {"D": 3}),
    "conv_transpose1d_stride_pad_dilation_outpad": (
        lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=2, output_padding=1, dilation=2),
        [("x", (2, 3, "L")), ("w", (3, 4, 3)), ("b", (4,))],
        [{"L": 5}, {"L": 8}], {"L": 6}),
    "conv_transpose2d_groups_all_options": (
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0), output_padding=(1, 0),
                                           groups=2, dilation=(1, 2)),
        [("x", (1, 4, "H", 4)), ("w", (4, 3, 3, 2)), ("b", (6,))],
        [{"H": 3}, {"H": 5}], {"H": 4}),
    "conv_transpose3d": (
        lambda x, w: F.conv_transpose3d(x, w, None, stride=2, padding=1),
        [("x", (1, 2, "D", 3, 2)), ("w", (2, 3, 3, 2, 2))],
        [{"D": 2}, {"D": 3}], {"D": 4}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_convolution_matches_pytorch(name, tmp_path):
    fn, specs, envs, third = CASES[name]
    source = make_seed(fn, specs, envs)
    assert kernels_of(source) == [k for k in kernels_of(source) if k.startswith("conv_")] and kernels_of(source)
    assert "tl.dot(wv, xv, input_precision=\"ieee\")" in source          # implicit GEMM, fp32 operands
    assert "atomic" not in source and "torch.zeros" not in source      # transposed: a gather
    assert "torch." not in source.split("def launch", 1)[0].split("import triton", 1)[1]
    assert_matches(source, fn, specs, envs + [third], tmp_path)


def test_other_block_sizes_are_correct_too(tmp_path):
    fn, specs, envs, third = CASES["conv_transpose2d_groups_all_options"]
    source = make_seed(fn, specs, envs)
    assert_matches(source, fn, specs, [third], tmp_path,
                   config={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 4})


def test_strided_output_sizes_become_size_symbols(tmp_path):
    """A strided conv's output size ((H - 3) // 2 + 1) is no product of the input's sizes: it
    becomes a symbol, so the mean's divisor H_out * W_out after the conv has an expression."""
    fn = lambda x, w: F.conv2d(x, w, stride=2).mean(dim=(2, 3))            # noqa: E731
    specs = [("x", (2, 3, "H", "H")), ("w", (4, 3, 3, 3))]
    envs = [{"H": 9}, {"H": 16}]
    source = make_seed(fn, specs, envs)
    assert "S_0c2_0 = (x.shape[2]" in source and "S_0c2_0" in source.split("S_0c2_1 =", 1)[1]
    assert_matches(source, fn, specs, envs + [{"H": 12}], tmp_path)


def test_unsupported_convolution_arguments_say_why():
    fn = lambda x, w: F.conv2d(x, w)                                        # noqa: E731
    specs = [("x", (1, 2, 5, 5)), ("w", (2, 2, 3, 3))]
    inputs = [{"name": n, "shape": list(s), "dtype": "float32", "role": "input"} for n, s in specs]
    graph = trace(fn, [torch.randn(s) for _, s in specs])
    conv = next(n for n in graph if n["op"] == "aten.convolution.default")
    conv["args"][3] = [[1, 1]]                                              # a malformed stride
    with pytest.raises(NoSeed, match="stride"):
        generate([graph, graph], [{}, {}], inputs, {})


def test_fuse_epilogue_moves_a_generated_relu_into_the_conv_kernel(tmp_path):
    from kernelfoundry.mutate.ast_module import KernelModule
    from kernelfoundry.mutate.base import ParentView
    from kernelfoundry.mutate.ops_base import OpContext
    from kernelfoundry.mutate.ops_fuse import fuse_epilogue
    fn = lambda x, w, b: torch.relu(F.conv2d(x, w, b, stride=2, padding=1)) * 0.5   # noqa: E731
    specs = [("x", ("N", 3, "H", 7)), ("w", (4, 3, 3, 3)), ("b", (4,))]
    envs = [{"N": 2, "H": 9}, {"N": 3, "H": 12}]
    source = make_seed(fn, specs, envs)
    assert len(kernels_of(source)) == 2                                     # conv, then the epilogue
    module = KernelModule.parse(source)
    edit = fuse_epilogue(OpContext(module=module, rng=random.Random(0), parent=ParentView(id=1, source=source)))
    fused = module.render(edit.tree)
    assert "into conv_" in edit.description
    assert kernels_of(fused) == [k for k in kernels_of(source) if k.startswith("conv_")]
    assert "bcast(" not in fused.split("def launch", 1)[1]                 # the epilogue's view went with it
    assert "BLOCK" in load_params(source) and "BLOCK" not in load_params(fused) and "BLOCK_N" in load_params(fused)
    assert fused.count("torch.empty(") == 1                                # the intermediate is gone
    assert_matches(fused, fn, specs, envs + [{"N": 1, "H": 10}], tmp_path)
    assert_matches(fused, fn, specs, [{"N": 1, "H": 10}], tmp_path,
                   config={"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "num_warps": 4})


def load_params(source):
    from kernelfoundry.candidate import parse_param_space
    return parse_param_space(source)


# ----------------------------------------------------------------------------- shared KernelBench files

SHARED_CASES = ["level1/75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____"
                "dilated__.py", "level2/57_Conv2d_ReLU_HardSwish.py",
                # a constructor int of 0 (padding) among the divisors, sizes lowered to the work budget
                "level2/89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max.py"]


@pytest.mark.slow      # a sandboxed import and the interpreter at the check shapes: minutes
@pytest.mark.parametrize("rel", SHARED_CASES)
def test_shared_kernelbench_conv_seeds_pass_the_check(rel, tmp_path, monkeypatch):
    path = SHARED / rel
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    monkeypatch.setenv("KERNELFOUNDRY_KB_CACHE", str(tmp_path / "cache"))
    from kernelfoundry.evaluate.inprocess import check_trusted
    from kernelfoundry.kernelbench.importer import import_problem, write_task
    from kernelfoundry.task import load_task
    imp = import_problem(path)
    assert imp.seed_source is not None, imp.no_seed_reason
    task = load_task(write_task(imp, tmp_path / "task.yaml"))
    gate = check_trusted(imp.seed_source, task, profiles=("normal", "large"))
    assert gate.passed, gate.reason


def test_a_block_m_no_group_fills_at_the_problems_own_sizes_is_not_offered():
    from kernelfoundry.candidate import parse_param_space
    specs = [("x", ["N", "C", "H", "H"]), ("w", ["O", 1, 3, 3])]
    envs = [{"N": 2, "C": 8, "H": 10, "O": 8}, {"N": 3, "C": 12, "H": 14, "O": 12}]
    inputs = [{"name": name, "shape": list(shape), "dtype": "float32", "role": "input"} for name, shape in specs]
    graphs = [trace(lambda x, w: F.conv2d(x, w, groups=env["C"]), [torch.randn(concrete(s, env)) for _, s in specs])
              for env in envs]

    def blocks(target):
        source = generate(graphs, [dict(e) for e in envs], inputs, sizes_of(dict(envs[0]), inputs), target)
        return parse_param_space(source)["BLOCK_M"]
    assert blocks(None) == [16, 32]                                         # nothing known: both
    assert blocks({"N": 16, "C": 64, "H": 512, "O": 64}) == [16]            # depthwise: one channel per group
