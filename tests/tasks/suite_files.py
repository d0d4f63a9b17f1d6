"""Helpers shared by the task-suite tests: where the files are, inputs, seed configs."""
from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

import torch

from kernelfoundry.candidate import HINT_PARAMS, default_config, kernel_configs, parse_param_space
from kernelfoundry.task import Task

ROOT = Path(__file__).resolve().parents[2]
TASK_DIR = ROOT / "experiments" / "tasks"
SUITE_DIR = ROOT / "experiments" / "suites"
TASK_FILES = sorted(TASK_DIR.glob("*.yaml"))
SEED_FILES = sorted((TASK_DIR / "kernels").glob("*.py"))


def make_inputs(task: Task, env: dict[str, int], seed: int) -> list[torch.Tensor]:
    """Random inputs in task order: standard normal floats, uniform ints in [low, high)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for spec in task.inputs:
        shape = spec.concrete_shape(env)
        dtype = getattr(torch, spec.dtype)
        if spec.is_float:
            out.append(torch.randn(shape, generator=gen, dtype=torch.float32).to(dtype))
        elif spec.dtype == "bool":
            out.append(torch.randint(0, 2, shape, generator=gen).to(torch.bool))
        else:
            low, high = spec.bound(spec.low, env), spec.bound(spec.high, env)
            out.append(torch.randint(low, high, shape, generator=gen, dtype=dtype))
    return out


def reference_fn(task: Task):
    """The task's ``reference`` function (trusted task text, run in the test process)."""
    namespace: dict = {}
    exec(compile(task.reference, f"<reference of {task.name}>", "exec"), namespace)
    return namespace["reference"]


@lru_cache(maxsize=None)
def load_seed(path: Path):
    """Import a trusted seed kernel module from its file (once per path)."""
    spec = importlib.util.spec_from_file_location(f"seed_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seed_configs(source: str) -> list[dict]:
    """The default config and the last non-default one (other values for every swept param)."""
    space = parse_param_space(source)
    hints = {k: v for k, v in default_config(space).items() if k in HINT_PARAMS}
    configs = kernel_configs(space, cap=64)
    return [{**configs[0], **hints}, {**configs[-1], **hints}]
