"""Imports of problems with bool/integer inputs, constants made in forward, dropout, Model-fixed sizes
and data-movement ops (flip, cat, gather, isnan): the task read off each one, and its generated seed
passing the correctness gate at the check shapes."""

from __future__ import annotations

import os

import pytest

from kernelfoundry.errors import TaskError

MASKS = '''
import torch
import torch.nn.functional as F

class Model(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, mask, labels):
        return torch.cumsum(x * mask, dim=self.dim), torch.where(mask, x, -2.0 * x), F.cross_entropy(x, labels)

batch_size = 48
num_classes = 200

def get_inputs():
    x = torch.randn(batch_size, num_classes)
    return [x, torch.rand(batch_size, num_classes) > 0.5, torch.randint(0, num_classes, (batch_size,))]

def get_init_inputs():
    return [1]
'''

# literal sizes: get_inputs() cannot be run at the check sizes; the ranges are read off its calls
LITERAL = '''
import torch

class Model(torch.nn.Module):
    def forward(self, x, idx, mask):
        g = torch.gather(x, 1, idx)
        return torch.cat([torch.flip(g, [1]), torch.where(mask, x, 0.0), torch.isnan(x).float()], 1).flip(0)

def get_inputs():
    return [torch.randn(40, 100), torch.randint(0, 100, (40, 33)), (torch.randn(40, 100) > 0).bool()]

def get_init_inputs():
    return []
'''

# out_features is fixed inside the Model and equals the batch size by chance; dropout p=0; a constant
CONSTANTS = '''
import torch

class Model(torch.nn.Module):
    def __init__(self, in_features, p):
        super().__init__()
        self.fc = torch.nn.Linear(in_features, 96)
        self.dropout = torch.nn.Dropout(p)

    def forward(self, x):
        x = self.dropout(self.fc(x))
        return torch.min(x, torch.tensor(0.25)) * 2.0 + torch.tensor(1.5, device=x.device)

def get_inputs():
    return [torch.randn(96, 200)]

def get_init_inputs():
    return [200, 0.0]
'''


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    old = os.environ.get("KERNELFOUNDRY_KB_CACHE")
    os.environ["KERNELFOUNDRY_KB_CACHE"] = str(tmp_path_factory.mktemp("kbcache"))
    yield
    if old is None:
        os.environ.pop("KERNELFOUNDRY_KB_CACHE", None)
    else:
        os.environ["KERNELFOUNDRY_KB_CACHE"] = old


def _import(tmp_path, name, source):
    from kernelfoundry.kernelbench.importer import import_problem, write_task
    from kernelfoundry.task import load_task
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    imported = import_problem(path)
    assert imported.seed_source is not None, imported.no_seed_reason
    return imported, load_task(write_task(imported, tmp_path / f"{name}.yaml"))


def _passes(imported, task):
    from kernelfoundry.evaluate.inprocess import check_trusted
    gate = check_trusted(imported.seed_source, task, profiles=("normal", "large"))
    assert gate.passed, gate.reason


def test_masks_and_labels_follow_the_size_globals(cache, tmp_path):
    from kernelfoundry.harness.inputs import InputFactory
    imported, task = _import(tmp_path, "masked", MASKS)
    spec = imported.task["inputs"]
    assert spec["mask"] == {"shape": ["x_0", "x_1"], "dtype": "bool"}
    # randint(0, num_classes): the bound is the class count's size symbol, so labels stay in range
    assert spec["labels"] == {"shape": ["x_0"], "dtype": "int64", "low": 0, "high": "x_1"}
    mask = InputFactory(task, 0).make(task.check_shapes[0])[1]
    assert mask.dtype.is_floating_point is False and 0.3 < mask.float().mean() < 0.7   # coin flips
    _passes(imported, task)


def test_literal_sizes_read_ranges_from_the_calls_and_seed_flip_cat_gather_isnan(cache, tmp_path):
    imported, task = _import(tmp_path, "literal", LITERAL)
    spec = imported.task["inputs"]
    assert spec["idx"]["dtype"] == "int64" and (spec["idx"]["low"], spec["idx"]["high"]) == (0, "x_1")
    assert spec["mask"]["dtype"] == "bool" and "low" not in spec["mask"]
    for op in ("remap_", "cat_"):                  # flip and gather through index remapping, cat per piece
        assert op in imported.seed_source
    _passes(imported, task)


def test_constants_dropout_zero_and_a_size_the_model_fixes(cache, tmp_path):
    imported, task = _import(tmp_path, "constants", CONSTANTS)
    spec = imported.task["inputs"]
    # the batch (96) stays a size; the Linear's 96 outputs, fixed in the constructor, stay literal
    assert spec["x"]["shape"] == ["x_0", "x_1"] and spec["fc_weight"]["shape"] == [96, "x_1"]
    assert spec["fc_bias"]["shape"] == [96] and all(env["x_0"] != 96 for env in task.check_shapes)
    assert "0.25" in imported.seed_source and "1.5" in imported.seed_source       # constants embedded
    _passes(imported, task)


def test_dropout_in_training_mode_is_refused_naming_it(cache, tmp_path):
    from kernelfoundry.kernelbench import load_task_or_problem as load_task
    path = tmp_path / "dropout.py"
    path.write_text(CONSTANTS.replace("return [200, 0.0]", "return [200, 0.2]"))
    with pytest.raises(TaskError, match=r"reference is random.*Dropout\(p=0.2\)"):
        load_task(path)


# max/min over a dim return (values, indices): the seed computes indices only where something reads them
MIN_MAX_DIM = '''
import torch

class Model(torch.nn.Module):
    def forward(self, x, y):
        low = torch.min(x * 2.0, dim=1, keepdim=True)[0]
        values, where = torch.max(y, dim=1)
        return low, values + where.float()

def get_inputs():
    return [torch.randn(16, 12, 10), torch.randn(16, 20)]

def get_init_inputs():
    return []
'''


def test_min_max_over_a_dim_compute_indices_only_when_read(cache, tmp_path):
    imported, task = _import(tmp_path, "minmax", MIN_MAX_DIM)
    source = imported.seed_source
    kernels = [line.split("(")[0][4:] for line in source.splitlines() if line.startswith("def ")]
    assert sum(k.startswith("reduce_") and not k.endswith("_idx") for k in kernels) == 2, kernels
    assert sum(k.endswith("_idx") for k in kernels) == 1, kernels          # only torch.max's indices
    # rows of 12 and 20 at the problem's own sizes: no 512-wide block, which would only mask lanes
    assert "'BLOCK_R': [128]," in source
    _passes(imported, task)


def test_a_long_row_at_the_problems_own_sizes_keeps_the_wide_block(cache, tmp_path):
    imported, _ = _import(tmp_path, "longrow", MIN_MAX_DIM.replace("torch.randn(16, 20)", "torch.randn(16, 700)"))
    assert "'BLOCK_R': [128, 512]," in imported.seed_source
