"""Every seed kernel matches its task's reference on every check shape, for two configs.

Seeds are trusted project files, so they run in-process in the Triton interpreter.
"""
from __future__ import annotations

import pytest
import torch

from kernelfoundry.task import load_task

from .suite_files import TASK_FILES, load_seed, make_inputs, reference_fn, seed_configs

CASES = [(path, seed, i) for path in TASK_FILES for seed in load_task(path).seeds
         for i in range(len(load_task(path).check_shapes))]


@pytest.mark.parametrize("task_path,seed_path,shape_index", CASES,
                         ids=[f"{p.stem}-{s.stem}-shape{i}" for p, s, i in CASES])
def test_seed_matches_reference(task_path, seed_path, shape_index):
    task = load_task(task_path)
    env = task.check_shapes[shape_index]
    reference = reference_fn(task)
    module = load_seed(seed_path)
    configs = seed_configs(seed_path.read_text())
    assert configs[0] != configs[1], "the seed's PARAMS offer only one config"
    for n, config in enumerate(configs):
        inputs = make_inputs(task, env, seed=1000 * shape_index + n)
        expected = reference(*[x.clone() for x in inputs])
        got = module.launch(*inputs, **config)
        assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, got.dtype)
        torch.testing.assert_close(got, expected, atol=task.atol, rtol=task.rtol,
                                   msg=lambda m: f"{task.name} {env} {config}: {m}")
