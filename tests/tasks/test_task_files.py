"""The task files and suites: they load, and together they cover what the suite promises."""
from __future__ import annotations

import ast

import pytest
import yaml

from kernelfoundry.candidate import HINT_PARAMS, parse_param_space, space_size
from kernelfoundry.task import load_task

from .suite_files import SEED_FILES, SUITE_DIR, TASK_DIR, TASK_FILES

GPUS = {"h100", "a100", "h200", "mi300x", "max1550"}
KNOWN_HARDWARE = GPUS | {"ascend910b2"}


@pytest.fixture(scope="module")
def tasks():
    return {p.name: load_task(p) for p in TASK_FILES}


@pytest.mark.parametrize("path", TASK_FILES, ids=lambda p: p.stem)
def test_task_file_loads(path):
    task = load_task(path)
    assert task.name == path.stem
    assert set(task.hardware) <= KNOWN_HARDWARE, task.hardware
    assert all(s.is_file() and s.parent == TASK_DIR / "kernels" for s in task.seeds)
    check_bytes = max(task.input_bytes(env) for env in task.check_shapes)
    target_bytes = min(task.input_bytes(env) for env in task.target_shapes)
    assert check_bytes < 1 << 20, "check shapes must stay small for the interpreter"
    assert target_bytes > 64 * check_bytes, "target shapes must be far larger than check shapes"


def test_suite_coverage(tasks):
    assert len(tasks) >= 12
    levels = [t.level for t in tasks.values()]
    assert levels.count(2) >= 3 and 1 in levels
    dtypes = {t.name: {s.dtype for s in t.inputs} for t in tasks.values()}
    assert sum(1 for d in dtypes.values() if d & {"float16", "bfloat16"}) >= 2
    assert any("float32" in d for d in dtypes.values())
    hardware = {h for t in tasks.values() for h in t.hardware}
    assert "ascend910b2" in hardware and len(hardware & GPUS) >= 2


def test_check_shapes_include_ragged_sizes(tasks):
    for task in tasks.values():
        sizes = {v for env in task.check_shapes for v in env.values()}
        assert any(v & (v - 1) for v in sizes), f"{task.name}: no non-power-of-two check size"
        assert len(task.check_shapes) >= 2, f"{task.name}: give at least two check shapes"


def _suite(name):
    data = yaml.safe_load((SUITE_DIR / name).read_text())
    assert set(data) <= {"name", "tasks", "budget"} and data["name"] == name.removesuffix(".yaml")
    paths = [(SUITE_DIR / p).resolve() for p in data["tasks"]]
    assert all(p.is_file() for p in paths), paths
    assert len(set(paths)) == len(paths)
    if "budget" in data:
        assert isinstance(data["budget"], int) and data["budget"] > 0
    return paths


def test_full_suite_lists_every_task():
    assert sorted(_suite("full.yaml")) == sorted(p.resolve() for p in TASK_FILES)


def test_smoke_suite_is_small():
    paths = _suite("smoke.yaml")
    assert 2 <= len(paths) <= 3
    assert all(p in {q.resolve() for q in TASK_FILES} for p in paths)


ALLOWED_IMPORTS = {"torch", "triton", "triton.language", "math"}
ALLOWED_TORCH_CALLS = {"empty", "empty_like"}


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: p.stem)
def test_seed_follows_candidate_format(path):
    """Seeds only import torch/triton/math; ``launch`` allocates and launches, nothing else."""
    source = path.read_text()
    tree = ast.parse(source)
    space = parse_param_space(source)
    assert space_size({k: v for k, v in space.items() if k not in HINT_PARAMS}) <= 8
    assert set(HINT_PARAMS) <= set(space)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= ALLOWED_IMPORTS
        assert not isinstance(node, (ast.ImportFrom, ast.Try, ast.Global, ast.Nonlocal, ast.Lambda))
    targets = [t for n in tree.body if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    assert [ast.unparse(t) for t in targets] == ["PARAMS"], "no module-level state besides PARAMS"
    jitted = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
              and any(ast.unparse(d) == "triton.jit" for d in n.decorator_list)}
    launch = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "launch")
    assert jitted and [n.arg for n in launch.args.kwonlyargs] == list(space)
    for node in ast.walk(launch):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = ast.unparse(node.func.value)
            if owner == "torch":
                assert node.func.attr in ALLOWED_TORCH_CALLS, ast.unparse(node)
        if isinstance(node, ast.BinOp):
            assert not isinstance(node.op, ast.MatMult), ast.unparse(node)
    launched = {ast.unparse(n.func.value) for n in ast.walk(launch)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)}
    assert launched and launched <= jitted
