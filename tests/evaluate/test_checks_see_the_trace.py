"""What the checks see is what the trace sees (issue 34, round 3): long rows on values far from zero,
an absolute tolerance that shrinks with the outputs, and inputs whose address tells nothing."""

from pathlib import Path

import numpy as np
import torch

from kernelfoundry.evaluate.judge.correctness import SCALE_SLACK, base_rms, compare, output_scale, plan_span_runs
from kernelfoundry.harness.inputs import LONG_PROFILE, InputFactory, trace_inputs
from kernelfoundry.evaluate.contract.span_shape import LONG_TRIP_BUDGET, long_shape
from kernelfoundry.harness.tiled import INPUT_ALIGN, filled_input, placed, release_all
from kernelfoundry.task import load_task, task_from_dict

TASKS = Path(__file__).resolve().parents[2] / "experiments" / "tasks"
SOFTMAX = load_task(TASKS / "softmax.yaml")
#: A grid probe of a one-row-per-program softmax: 64 programs at {M=64, N=1000}, 1 with M=1, 64 with N=1.
ROW_PROBE = {"config": {"BLOCK_N": 1024}, "base": {"M": 64, "N": 1000}, "programs": [64],
             "ones": {"M": [1], "N": [64]}}


# ---- value ranges at long rows ----

def test_long_shape_keeps_rows_near_the_target_length_within_the_trip_budget():
    env = long_shape(SOFTMAX, {"BLOCK_N": 1024}, ROW_PROBE)
    assert env["M"] == 2 and env["N"] % 2 == 1
    assert 65536 < env["N"] <= 393216 and env["M"] * env["N"] / 1024 <= LONG_TRIP_BUDGET
    # a config with the whole row in budget gets the whole (odd) row
    assert long_shape(SOFTMAX, {"BLOCK_N": 4096}, ROW_PROBE) == {"M": 2, "N": 393215}


def test_long_shape_is_none_when_rows_are_no_longer_than_at_the_check_shapes():
    task = task_from_dict({"name": "rows", "reference": "import torch\ndef reference(x):\n    return x\n",
                           "inputs": {"x": {"shape": ["M", "N"], "dtype": "float32"}},
                           "shapes": {"check": [{"M": 4, "N": 999}], "target": [{"M": 4096, "N": 1000}]},
                           "seeds": [__file__]})
    probe = {**ROW_PROBE, "base": {"M": 4, "N": 999}}
    assert long_shape(task, {"BLOCK_N": 1024}, probe) is None


def test_the_long_profile_lies_far_from_zero_with_a_ramp_that_alternates_by_row():
    x = InputFactory(SOFTMAX, seed=3).make({"M": 4, "N": 20001}, LONG_PROFILE)[0]
    assert 9e4 < x.mean().item() < 1.1e5 and 900 < x.std().item() < 1500
    head, tail = x[:, :2000].mean(dim=1), x[:, -2000:].mean(dim=1)
    assert (tail[0::2] - head[0::2] > 1500).all() and (head[1::2] - tail[1::2] > 1500).all()
    # the largest value of a rising row lies past its first two thirds
    assert x[0].argmax().item() > 2 * 20001 // 3
    half = task_from_dict({"name": "h", "reference": "import torch\ndef reference(x):\n    return x\n",
                           "inputs": {"x": {"shape": ["M", "N"], "dtype": "float16"}},
                           "shapes": {"check": [{"M": 4, "N": 99}], "target": [{"M": 8, "N": 999}]},
                           "seeds": [__file__]})
    y = InputFactory(half, seed=0).make({"M": 4, "N": 999}, LONG_PROFILE)[0]
    assert torch.isfinite(y).all() and y.abs().max().item() < 65504


def test_span_plan_adds_one_long_run_per_config_on_the_long_profile():
    runs = plan_span_runs(SOFTMAX, [ROW_PROBE], [{"BLOCK_N": 1024}], seed=0, first_call=40)
    long = [r for r in runs if r.get("long")]
    assert len(long) == 1 and long[0]["profile"] == LONG_PROFILE and long[0]["span"]
    assert [r["profile"] for r in runs if not r.get("long")] == ["normal", "normal"]
    assert [r["call"] for r in runs] == list(range(40, 40 + len(runs)))


# ---- the tolerance at the outputs' scale ----

def test_output_scale_shrinks_with_the_outputs_and_never_grows_past_the_old_rule():
    small = np.full(1000, 4e-5)
    assert output_scale(small) == 1.0                                   # the old rule
    assert np.isclose(output_scale(small, base=1e-2), SCALE_SLACK * 4e-5 / 1e-2)  # atol keeps its ratio to the RMS
    assert output_scale(small, base=5e-5) == 1.0                        # not much smaller than at the base
    big = np.full(10, 50.0)
    assert output_scale(big, base=5.0) == 50.0 and output_scale(big, base=0.0) == 50.0
    assert output_scale(np.full(10, 500.0), base=1e4) == 500.0
    assert np.isclose(output_scale(np.full(10, 0.1), base=1e3), SCALE_SLACK * 0.1)   # large profile, shrunk output


def test_a_one_percent_error_on_small_softmax_outputs_fails_and_rounding_passes():
    g = torch.Generator().manual_seed(0)
    ref = torch.softmax(torch.randn(3, 24577, generator=g), dim=-1)
    base = base_rms(SOFTMAX, "normal")[0]
    assert 5e-3 < base < 3e-2
    assert compare(ref * 1.003, ref, SOFTMAX.atol, SOFTMAX.rtol) is None          # passed before
    assert "elements differ" in compare(ref * 1.003, ref, SOFTMAX.atol, SOFTMAX.rtol, base)
    honest = (ref.double() * (1 + 2e-6 * torch.randn(ref.shape, generator=g, dtype=torch.float64))).float()
    assert compare(honest, ref, SOFTMAX.atol, SOFTMAX.rtol, base) is None


# ---- inputs whose address tells nothing ----

def _aligned(t: torch.Tensor) -> bool:
    return t.data_ptr() % INPUT_ALIGN == 0


def test_placed_inputs_are_aligned_copies():
    for t in (torch.randn(7, 129), torch.randn(()), torch.randint(0, 2, (33,)).bool(),
              torch.randn(5, 4).t(), torch.randn(9).to(torch.bfloat16)):
        p = placed(t)
        assert _aligned(p) and p.is_contiguous() and p.dtype == t.dtype and torch.equal(p, t)


def test_trace_inputs_are_aligned_like_check_inputs_small_or_tiled():
    small, m1 = filled_input((64, 1000), torch.float32, lambda n: torch.randn(n))
    tiled, m2 = filled_input((4096, 2048), torch.float32, lambda n: torch.randn(n))
    try:
        assert m1 is None and _aligned(small)
        assert m2 is not None and _aligned(tiled) and torch.isfinite(tiled[-1]).all()
    finally:
        release_all([m1, m2])
    xs, maps = trace_inputs(SOFTMAX, {"M": 7, "N": 129}, seed=1)
    try:
        assert all(_aligned(x) for x in xs)
    finally:
        release_all(maps)


def test_the_candidates_own_allocations_are_aligned_with_their_strides_and_poison():
    from kernelfoundry.harness.guard import DispatchGuard
    with DispatchGuard(poison_empty=True, poison_max_bytes=1 << 20):
        out = torch.empty(7, 129)
        strided = torch.empty_strided((4, 3), (1, 4))
        zeros = torch.zeros(5, dtype=torch.int64)
        large = torch.empty(1 << 19)                 # past the poison limit: fresh zero pages
    assert all(_aligned(t) for t in (out, strided, zeros, large))
    assert out.isnan().all() and strided.stride() == (1, 4) and strided.isnan().all()
    assert (zeros == 0).all() and (large[:1000] == 0).all()
