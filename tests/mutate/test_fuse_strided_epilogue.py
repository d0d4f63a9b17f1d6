"""``fuse_epilogue`` on the KernelBench seed generator's kernels: a convolution (rank-4 buffer,
rows (n, c_out) x positions) followed by an elementwise kernel that reads the buffer and a
broadcast bias through strides.  The fused kernel matches PyTorch under the interpreter; a
buffer that is also returned stays unfused."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import os
import random
import sys

os.environ["TRITON_INTERPRET"] = "1"   # before any kernel module is imported

import pytest
import torch
import torch.nn.functional as F

from kernelfoundry.kernelbench.graph import trace
from kernelfoundry.kernelbench.reference import sizes_of
from kernelfoundry.kernelbench.seedgen import generate
from kernelfoundry.mutate.ast_module import KernelModule, Skip
from kernelfoundry.mutate.base import ParentView
from kernelfoundry.mutate.ops_base import OpContext
from kernelfoundry.mutate.ops_fuse import fuse_epilogue

_counter = itertools.count()
SPECS = [("x", ("N", 3, "H", 6)), ("w", (5, 3, 3, 2)), ("bias", (5, 1, 1))]
ENVS = [{"N": 2, "H": 7}, {"N": 3, "H": 10}]


def _seed(fn):
    inputs = [{"name": n, "shape": list(s), "dtype": "float32", "role": "input"} for n, s in SPECS]
    graphs = [trace(fn, [torch.randn([env.get(d, d) for d in s]) for _, s in SPECS]) for env in ENVS]
    return generate(graphs, [dict(e) for e in ENVS], inputs, sizes_of(dict(ENVS[0]), inputs))


def _fuse(source):
    module = KernelModule.parse(source)
    edit = fuse_epilogue(OpContext(module=module, rng=random.Random(0), parent=ParentView(id=1, source=source)))
    return module.render(edit.tree)


def _run(source, tmp_path, args, **config):
    name = f"fused_conv_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        return module.launch(*args, **{**{k: v[0] for k, v in module.PARAMS.items()}, **config})
    finally:
        sys.modules.pop(name, None)


def test_conv_bias_add_tanh_epilogue_fuses_and_matches(tmp_path):
    fn = lambda x, w, bias: torch.tanh(F.conv2d(x, w, padding=(0, 1)) + bias)    # noqa: E731
    source = _seed(fn)
    fused = _fuse(source)
    tree = ast.parse(fused)
    launched = [n.func.value.id for n in ast.walk(tree) if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Subscript) and isinstance(n.func.value, ast.Name)]
    assert len(launched) == 1 and launched[0].startswith("conv_")
    launch_src = fused.split("def launch", 1)[1]
    assert launch_src.count("torch.empty(") == 1 and "bcast(bias" in launch_src   # bias still broadcast
    gen = torch.Generator().manual_seed(0)
    for env, config in (({"N": 1, "H": 9}, {}), ({"N": 2, "H": 5}, {"BLOCK_M": 16, "BLOCK_N": 16})):
        args = [torch.randn([env.get(d, d) for d in s], generator=gen) for _, s in SPECS]
        torch.testing.assert_close(_run(fused, tmp_path, args, **config), fn(*args), atol=1e-4, rtol=1e-4)


def test_a_buffer_that_is_also_returned_is_not_fused():
    def fn(x, w, bias):
        y = F.conv2d(x, w)
        return y, torch.relu(y) + bias
    source = _seed(fn)
    with pytest.raises(Skip, match="used in launch"):
        _fuse(source)
