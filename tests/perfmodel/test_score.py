"""Baseline, tuning plan, footprint curves and score_candidate on hand-built traces."""

import json
import math

import numpy as np
import pytest

from kernelfoundry.perfmodel.baseline import baseline, profile_reference, sol_seconds
from kernelfoundry.perfmodel.features import footprint_curve
from kernelfoundry.perfmodel.hardware import load_hardware
from kernelfoundry.perfmodel.memory_traffic import eval_curve, invert_curve
from kernelfoundry.perfmodel.score import score_candidate
from kernelfoundry.perfmodel.tuning import hint_grid, plan_configs
from kernelfoundry.task import task_from_dict

from .tracegen import config_trace, matmul_trace, softmax_trace


def _task(reference, inputs, target, hardware=("h100",)):
    return task_from_dict({"name": "t", "reference": reference, "inputs": inputs,
                           "shapes": {"check": [target[0]], "target": target}, "seeds": ["x.py"],
                           "hardware": list(hardware)}, check_files=False)


SOFTMAX = "import torch\ndef reference(x):\n    return torch.softmax(x, dim=-1)\n"
MATMUL = "import torch\ndef reference(a, b):\n    return a @ b\n"


def test_baseline_counts_ops_bytes_and_flops():
    t = _task(SOFTMAX, {"x": {"shape": ["M", "N"], "dtype": "float32"}}, [{"M": 4096, "N": 8192}])
    prof = profile_reference(t, t.target_shapes[0])
    assert [o.name for o in prof.ops] == ["_softmax"] and prof.ops[0].kind == "reduction"
    assert prof.ops[0].bytes == 2 * 4096 * 8192 * 4 and prof.output_bytes == 4096 * 8192 * 4
    m = _task(MATMUL, {"a": {"shape": ["M", "K"], "dtype": "float16"}, "b": {"shape": ["K", "N"], "dtype": "float16"}},
              [{"M": 2048, "N": 1024, "K": 512}])
    prof = profile_reference(m, m.target_shapes[0])
    assert prof.gemm_flops == 2 * 2048 * 1024 * 512
    h100 = load_hardware("h100")
    eager, sol = baseline(m, m.target_shapes[0], h100)
    assert sol == pytest.approx(max(prof.gemm_flops / 989.4e12, (prof.input_bytes + prof.output_bytes) / 3.35e12))
    assert eager > sol


def test_sol_is_memory_bound_for_softmax():
    t = _task(SOFTMAX, {"x": {"shape": ["M", "N"], "dtype": "float32"}}, [{"M": 1024, "N": 1024}])
    prof = profile_reference(t, t.target_shapes[0])
    assert sol_seconds(prof, load_hardware("h100")) == pytest.approx(2 * 1024 * 1024 * 4 / 3.35e12, rel=0.01)


def test_reference_that_fails_on_meta_falls_back():
    ref = "import torch\ndef reference(x):\n    return x[x > 0].sum() + float(x.max())\n"
    t = _task(ref, {"x": {"shape": ["N"], "dtype": "float32"}}, [{"N": 4096}])
    prof = profile_reference(t, t.target_shapes[0])
    assert not prof.exact and "meta" in prof.note and prof.input_bytes == 4096 * 4


def test_hint_grid_and_capped_plan_is_seeded():
    space = {"BLOCK": [64, 128, 256], "num_warps": [4, 8], "num_stages": [1, 2, 3]}
    assert len(hint_grid(space)) == 6 and hint_grid({"BLOCK": [1]}) == [{}]
    kernels = [{"BLOCK": b} for b in space["BLOCK"]]
    full = plan_configs(kernels, space, cap=100)
    assert len(full) == 18 and not full.sampled and full.configs[0] == {"BLOCK": 64, "num_warps": 4, "num_stages": 1}
    a, b = plan_configs(kernels, space, cap=7, seed=3), plan_configs(kernels, space, cap=7, seed=3)
    assert a.sampled and len(a) == 7 and a.configs == b.configs and a.configs[0] == full.configs[0]


def test_footprint_curve_interpolates_extrapolates_and_caps():
    pts = [[1, 4], [2, 8], [4, 8], [8, 16]]                 # sectors; 2 programs share, then slope 2/program
    c = footprint_curve(pts, unique_bytes=128.0, tensor_bytes=1024.0, programs=1000)
    assert c[0] == 128.0 and c[2] == 256.0 and c[3] == 512.0
    assert c[4] == 1024.0 and c[-1] == 1024.0               # 16 programs -> 1024 B: the cap
    grid = c[None, :]
    assert eval_curve(grid, np.array([[3.0]]))[0, 0] == 256.0
    assert invert_curve(grid, np.array([[512.0]]))[0, 0] == pytest.approx(8.0)
    assert math.isinf(invert_curve(grid, np.array([[4096.0]]))[0, 0])


def _softmax_task():
    return _task(SOFTMAX, {"x": {"shape": ["M", "N"], "dtype": "float32"}}, [{"M": 4096, "N": 393216}],
                 hardware=("h100", "ascend910b2"))


def test_score_prefers_fewer_passes_and_explains_rereads():
    t = _softmax_task()
    shape = t.target_shapes[0]
    space = {"BLOCK_N": [512, 2048], "PASSES": [3, 2], "num_warps": [4, 8]}
    traces = [config_trace([softmax_trace(4096, 393216, block=b, passes=p)], {"BLOCK_N": b, "PASSES": p}, shape=shape)
              for b in space["BLOCK_N"] for p in space["PASSES"]]
    r = score_candidate(t, traces, space, ["h100", "ascend910b2"])
    assert r.objective is not None and 0 < r.objective < 10
    assert r.hardware["h100"].best_params["PASSES"] == 2
    assert 0 < r.hardware["h100"].sol_fraction < 1
    assert "re-read" in r.feedback and "h100" in r.feedback and "ascend910b2" in r.feedback
    per = r.hardware["h100"].per_shape[0]
    assert per["bound"] == "dram" and per["latency_s"] == pytest.approx(r.hardware["h100"].latency_s)
    assert set(per["breakdown"]) >= {"dram", "l2", "compute-matrix", "launch"}
    json.dumps(r.to_dict())
    assert r.best_configs and all("num_warps" in c for c in r.best_configs)


def test_score_zero_when_no_config_fits_and_none_without_traces():
    m = _task(MATMUL, {"a": {"shape": ["M", "K"], "dtype": "float16"}, "b": {"shape": ["K", "N"], "dtype": "float16"}},
              [{"M": 4096, "N": 4096, "K": 4096}], hardware=("h100", "mi300x"))
    shape = m.target_shapes[0]
    traces = [config_trace([matmul_trace(4096, 4096, 4096, bm=256, bn=256, bk=64)], {"BLOCK": 256}, shape=shape)]
    r = score_candidate(m, traces, {"BLOCK": [256], "num_stages": [4]}, ["h100", "mi300x"])
    assert r.objective == 0.0 and math.isinf(r.hardware["mi300x"].latency_s)
    assert "no valid config: shared memory over capacity" in r.feedback
    assert score_candidate(m, [], {"BLOCK": [256]}, ["h100"]).objective is None
