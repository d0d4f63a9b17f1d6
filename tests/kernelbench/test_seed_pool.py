"""Generated starting kernels of pooling windows (seed_pool.py): max pooling (values and indices),
average pooling and adaptive pooling in 1D/2D/3D, checked against PyTorch at the check shapes."""

from __future__ import annotations

import pytest
import torch

from kernelfoundry import REPO_DIR

SHARED = REPO_DIR.parent / "shared" / "kernelbench"

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pools = nn.ModuleList([{pools}])

    def forward(self, x):
        outs = []
        for pool in self.pools:
            out = pool(x)
            outs += list(out) if isinstance(out, tuple) else [out]
        return tuple(outs)


def get_inputs():
    return [torch.randn({shape})]


def get_init_inputs():
    return []
'''

#: one problem per spatial rank, every pooling variant of that rank on the same input (one import each)
CASES = {
    "pool1d": ("(3, 5, 41)", [
        "nn.MaxPool1d(4, stride=3, padding=2, dilation=2, ceil_mode=True)",
        "nn.MaxPool1d(3, stride=2, padding=1, return_indices=True)",
        "nn.AvgPool1d(4, stride=3, padding=2, ceil_mode=True, count_include_pad=False)",
        "nn.AvgPool1d(3, stride=2, padding=1)",
        "nn.AdaptiveAvgPool1d(6)"]),
    "pool2d": ("(2, 6, 35, 29)", [
        "nn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2))",
        "nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True, return_indices=True)",
        "nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True)",
        "nn.AvgPool2d((3, 4), stride=(2, 3), padding=(1, 2), count_include_pad=False)",
        "nn.AvgPool2d(3, stride=2, padding=1, divisor_override=5)",
        "nn.AdaptiveAvgPool2d((5, 7))",
        "nn.AdaptiveMaxPool2d((4, 6))",
        # a view after a strided window whose size is no product of the input's sizes (a pool symbol)
        "nn.Sequential(nn.AvgPool2d(4, stride=3), nn.Sigmoid(), nn.Flatten(1))"]),
    "pool3d": ("(2, 3, 17, 19, 21)", [
        "nn.MaxPool3d(3, stride=2, padding=1, dilation=(1, 2, 1), ceil_mode=True)",
        "nn.MaxPool3d(2, return_indices=True)",
        "nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)",
        "nn.AdaptiveAvgPool3d((3, 4, 5))"]),
}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """name -> (source of the generated seed, task); each problem imported once (a sandboxed job)."""
    from kernelfoundry.kernelbench.importer import import_problem, write_task
    from kernelfoundry.task import load_task
    root = tmp_path_factory.mktemp("pool")
    out = {}
    for name, (shape, pools) in CASES.items():
        path = root / f"{name}.py"
        path.write_text(PROBLEM.format(pools=", ".join(pools), shape=shape))
        imp = import_problem(path)
        assert imp.seed_source is not None, f"{name}: {imp.no_seed_reason}"
        out[name] = (imp.seed_source, load_task(write_task(imp, root / name / "task.yaml")))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_pooling_seeds_match_pytorch_at_the_check_shapes(imported, name):
    from kernelfoundry.evaluate.inprocess import check_trusted
    source, task = imported[name]
    kernels = source.split("def launch", 1)[0].split("import triton", 1)[1]
    assert "torch." not in kernels                               # all computation is Triton
    pools = source.count("def maxpool_") + source.count("def avgpool_")
    assert pools == len(CASES[name][1]) and source.count("pool_") == 2 * pools     # a kernel and a launch each
    assert "tl.store(idx + offs, tl.where(nan, last, first)" in source    # the returned indices are computed
    gate = check_trusted(source, task, profiles=("normal", "large"))
    assert gate.passed, f"{name}: {gate.reason}"


@pytest.mark.parametrize("right, wrong", [
    ("lo0 = j2 * S0 - P0", "lo0 = j2 * S0 - P0 + 1"),                        # windows one row late
    ("tl.where(nan, last, first)", "tl.where(nan, last, first + in1)"),     # indices one row off
    ("res = tl.sum(acc, axis=1) / (DIV)", "res = tl.sum(acc, axis=1) / (DIV + 1)")])
def test_a_wrong_kernel_fails_the_check(imported, right, wrong):
    """The check compares every output, the indices included: a kernel one step off fails."""
    from kernelfoundry.evaluate.inprocess import check_trusted
    source, task = imported["pool2d"]
    assert right in source
    gate = check_trusted(source.replace(right, wrong, 1), task, profiles=("normal",))
    assert not gate.passed and "differ" in gate.reason


def test_indices_are_stored_only_when_the_graph_reads_them(imported):
    source = imported["pool3d"][0]
    kernels = {part.split("(", 1)[0]: part for part in source.split("def ")[1:]}
    plain, with_idx = kernels["maxpool_1"], kernels["maxpool_4"]
    assert "pos" not in plain and "idx" not in plain
    assert "tl.store(idx + offs" in with_idx


@pytest.mark.parametrize("ceil", [False, True])
def test_output_sizes_follow_pytorch(ceil):
    """The launch's size formula against PyTorch's own, over kernels, strides, paddings, dilations."""
    from kernelfoundry.kernelbench.seed_pool import _out_size
    for n in (5, 6, 7, 16, 17, 33):
        for k in (1, 2, 3, 4):
            for s in (1, 2, 3):
                for p in range(k // 2 + 1):
                    for d in (1, 2):
                        if d * (k - 1) + 1 > n + 2 * p:
                            continue
                        want = torch.nn.functional.max_pool1d(torch.empty(1, 1, n, device="meta"), k, s, p, d,
                                                              ceil_mode=ceil).shape[-1]
                        for text in (_out_size("n", str(k), str(s), str(p), str(d), ceil),
                                     _out_size("n", f"({k})", f"({s})", f"({p})", f"({d})", ceil)):
                            assert eval(text, {"n": n, "min": min}) == want, (n, k, s, p, d, ceil, text)


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is not on this machine")
@pytest.mark.parametrize("stem", ["42_Max_Pooling_2D", "43_Max_Pooling_3D", "44_Average_Pooling_1D",
                                  "46_Average_Pooling_3D"])
def test_kernelbench_pooling_problems_get_a_seed(stem):
    from kernelfoundry.kernelbench.importer import import_problem
    imp = import_problem(SHARED / "level1" / f"{stem}.py")
    assert imp.seed_source is not None, imp.no_seed_reason
    assert ("maxpool_" if "Max" in stem else "avgpool_") in imp.seed_source
