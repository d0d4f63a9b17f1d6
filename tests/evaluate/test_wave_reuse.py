"""Provisional traces of one job share the wave pass of a launch that recurs unchanged (wave_reuse.py);
dense traces never do."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton: the traces run in this process

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from kernelfoundry.evaluate import inprocess  # noqa: E402
from kernelfoundry.evaluate.child.wave_reuse import WaveReuse, launch_key  # noqa: E402
from kernelfoundry.sandbox import BlobReader  # noqa: E402
from kernelfoundry.task import task_from_dict  # noqa: E402

#: Two launches: the first never changes with the config, the second takes its block from it.
CHAIN = '''
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_A": [256], "BLOCK_B": [128, 256], "num_warps": [4]}


@triton.jit
def scale_kernel(x_ptr, t_ptr, n, BLOCK_A: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_A + tl.arange(0, BLOCK_A)
    mask = offs < n
    tl.store(t_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)


@triton.jit
def relu_kernel(t_ptr, y_ptr, n, BLOCK_B: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    mask = offs < n
    t = tl.load(t_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(t > 0, t, 0.0), mask=mask)


def launch(x, *, BLOCK_A, BLOCK_B, num_warps):
    n = x.numel()
    t = torch.empty_like(x)
    y = torch.empty_like(x)
    scale_kernel[(triton.cdiv(n, BLOCK_A),)](x, t, n, BLOCK_A=BLOCK_A, num_warps=num_warps)
    relu_kernel[(triton.cdiv(n, BLOCK_B),)](t, y, n, BLOCK_B=BLOCK_B, num_warps=num_warps)
    return y
'''


@pytest.fixture(scope="module")
def task():
    return task_from_dict({
        "name": "scale_relu", "description": "relu(2x)",
        "reference": "import torch\ndef reference(x):\n    return torch.relu(2 * x)\n",
        "inputs": {"x": {"shape": ["M", "N"], "dtype": "float32"}},
        "shapes": {"check": [{"M": 3, "N": 300}], "target": [{"M": 64, "N": 8192}]},
        "tolerance": {"atol": 1e-6, "rtol": 1e-6}, "seeds": ["chain.py"], "hardware": ["h100"]}, check_files=False)


def _trace(task, configs, dense, source=CHAIN):
    payload = {**inprocess._payload(source, task, configs, {"num_warps": 4}, 0), "kind": "trace",
               "trace_programs": 4, "dense": dense}
    result, blob = inprocess._run(payload)
    assert result["trace"]["error"] is None
    return result["trace"], blob


def _anchors(trace, blob, launch):
    return BlobReader.get(blob, trace["launches"][launch]["wave"]["anchors"]).reshape(-1, 4)


CONFIGS = [{"BLOCK_A": 256, "BLOCK_B": 128}, {"BLOCK_A": 256, "BLOCK_B": 256}]


def test_a_provisional_trace_takes_the_wave_of_a_launch_an_earlier_config_ran_unchanged(task):
    report, blob = _trace(task, CONFIGS, dense=False)
    assert report["waves_reused"] == 1                 # scale_kernel under the second config; relu_kernel differs
    first, second = report["traces"]
    assert np.array_equal(_anchors(first, blob, 0), _anchors(second, blob, 0))
    assert len(_anchors(second, blob, 0)) > 0
    # what it took is what tracing the second config alone records
    alone, alone_blob = _trace(task, CONFIGS[1:], dense=False)
    assert alone["waves_reused"] == 0
    for launch in (0, 1):
        assert np.array_equal(_anchors(second, blob, launch), _anchors(alone["traces"][0], alone_blob, launch))
        assert second["launches"][launch]["wave"]["programs"] == alone["traces"][0]["launches"][launch]["wave"][
            "programs"]


def test_dense_traces_run_every_wave(task):
    report, _ = _trace(task, CONFIGS, dense=True)
    assert report["waves_reused"] == 0


def _key(fn, grid, args, targets=frozenset({(0, 1)})):
    return launch_key(fn, grid, args, set(targets))


def test_a_launch_is_the_same_only_with_the_same_kernel_grid_arguments_aliasing_and_load_sites():
    def kernel():
        pass

    def other():
        pass

    x, y = torch.zeros(64), torch.zeros(64)
    base = _key(kernel, (4, 1, 1), {"x": x, "y": y, "n": 64, "BLOCK": 16})
    assert base == _key(kernel, (4, 1, 1), {"x": torch.ones(64), "y": torch.ones(64), "n": 64, "BLOCK": 16})
    assert base != _key(other, (4, 1, 1), {"x": x, "y": y, "n": 64, "BLOCK": 16})
    assert base != _key(kernel, (8, 1, 1), {"x": x, "y": y, "n": 64, "BLOCK": 16})
    assert base != _key(kernel, (4, 1, 1), {"x": x, "y": y, "n": 64, "BLOCK": 32})
    assert base != _key(kernel, (4, 1, 1), {"x": x, "y": y, "n": 65, "BLOCK": 16})
    assert base != _key(kernel, (4, 1, 1), {"x": x, "y": y, "n": 64.0, "BLOCK": 16})
    assert base != _key(kernel, (4, 1, 1), {"x": x, "y": x, "n": 64, "BLOCK": 16})            # aliasing
    assert base != _key(kernel, (4, 1, 1), {"x": x[1:], "y": y, "n": 64, "BLOCK": 16})        # offset
    assert base != _key(kernel, (4, 1, 1), {"x": x.view(8, 8).t(), "y": y, "n": 64, "BLOCK": 16})
    assert base != _key(kernel, (4, 1, 1), {"x": x.double(), "y": y, "n": 64, "BLOCK": 16})
    assert base != _key(kernel, (4, 1, 1), {"x": x, "y": y, "n": 64, "BLOCK": 16}, {(0, 2)})
    assert _key(kernel, (4, 1, 1), {"x": x, "host": object()}) is None


def test_the_store_counts_what_it_saved():
    reuse = WaveReuse()
    assert reuse.get(("k",)) is None and reuse.get(None) is None
    rows = np.arange(8, dtype=np.int64).reshape(2, 4)
    reuse.put(("k",), 2, rows)
    rows[:] = 0                                        # the store keeps its own copy
    programs, kept = reuse.get(("k",))
    assert programs == 2 and kept.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    reuse.put(None, 1, rows)                           # a launch never reused is still counted as traced
    assert (reuse.reused, reuse.traced) == (1, 2)


#: Hostile: the second launch's key is the same under both configs, but its load addresses follow a flag the
#: first launch writes, which depends on BLOCK_A: under BLOCK_A=128 every program's extra load hits one
#: sector (all "shared"), under 256 each of the first 256 programs its own, where the wave pass looks and the
#: sampled programs (the first, the last, seeded ones) rarely do, so both configs anchor the same load sites.
#: A reused wave lends the second config the first config's anchors.
FLAG_CHAIN = CHAIN.replace('PARAMS = {"BLOCK_A": [256], "BLOCK_B": [128, 256], "num_warps": [4]}',
                           'PARAMS = {"BLOCK_A": [128, 256], "BLOCK_B": [128], "num_warps": [4]}').replace(
    """    tl.store(t_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)
""", """    tl.store(t_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)
    tl.store(f_ptr + tl.program_id(0), tl.full([], BLOCK_A // 256, tl.int32))
""").replace("def scale_kernel(x_ptr, t_ptr, n, BLOCK_A: tl.constexpr):",
             "def scale_kernel(x_ptr, t_ptr, f_ptr, n, BLOCK_A: tl.constexpr):").replace(
    "def relu_kernel(t_ptr, y_ptr, n, BLOCK_B: tl.constexpr):",
    "def relu_kernel(t_ptr, y_ptr, f_ptr, n, BLOCK_B: tl.constexpr):").replace(
    """    t = tl.load(t_ptr + offs, mask=mask, other=0.0)
""", """    spread = tl.load(f_ptr)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0)
    pid = tl.program_id(0)
    early = ((pid > 0) & (pid < 256)).to(tl.int32)       # wave programs, rarely a sampled one
    t += 0.0 * tl.load(t_ptr + (offs % 32) + spread * early * pid * BLOCK_B, mask=mask, other=0.0)
""").replace("    t = torch.empty_like(x)\n",
             "    t = torch.empty_like(x)\n    f = torch.zeros(triton.cdiv(n, 128), dtype=torch.int32)\n").replace(
    "](x, t, n, BLOCK_A", "](x, t, f, n, BLOCK_A").replace("](t, y, n, BLOCK_B", "](t, y, f, n, BLOCK_B")


def test_a_wave_that_follows_an_earlier_launchs_data_only_steers_the_dense_traces(task):
    assert FLAG_CHAIN.count("f_ptr") == 4                              # the hostile edit applied
    report, blob = _trace(task, [{"BLOCK_A": 128, "BLOCK_B": 128}, {"BLOCK_A": 256, "BLOCK_B": 128}], dense=False, source=FLAG_CHAIN)
    alone, alone_blob = _trace(task, [{"BLOCK_A": 256, "BLOCK_B": 128}], dense=False, source=FLAG_CHAIN)
    # the provisional trace of the second config did take the first config's wave of relu_kernel...
    assert report["waves_reused"] >= 1
    assert not np.array_equal(_anchors(report["traces"][1], blob, 1), _anchors(alone["traces"][0], alone_blob, 1))
    # ...but the dense trace every reported config gets is its own
    dense, dense_blob = _trace(task, [{"BLOCK_A": 256, "BLOCK_B": 128}], dense=True, source=FLAG_CHAIN)
    assert dense["waves_reused"] == 0
    assert np.array_equal(_anchors(dense["traces"][0], dense_blob, 1), _anchors(alone["traces"][0], alone_blob, 1))
