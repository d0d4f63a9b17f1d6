"""Load and correctness gates, driven in-process (child jobs and judge, without the sandbox)."""

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

from pathlib import Path

import numpy as np
import pytest
import torch

from kernelfoundry.candidate import kernel_configs, parse_param_space
from kernelfoundry.evaluate.judge.correctness import compare, describe_mismatch, plan_runs
from kernelfoundry.harness.guard import DispatchGuard, TorchComputeRefused
from kernelfoundry.evaluate.inprocess import check_trusted
from kernelfoundry.task import load_task, task_from_dict

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"
VECTOR_ADD = task_from_dict({
    "name": "vector_add", "reference": "import torch\ndef reference(a, b):\n    return a + b\n",
    "inputs": {"a": {"shape": ["N"], "dtype": "float32"}, "b": {"shape": ["N"], "dtype": "float32"}},
    "shapes": {"check": [{"N": 1000}, {"N": 4099}], "target": [{"N": 1 << 20}]},
    "tolerance": {"atol": 1e-6, "rtol": 1e-6}, "seeds": [str(KERNELS / "vector_add.py")]})
VECTOR_ADD_SOURCE = (KERNELS / "vector_add.py").read_text()


def variant(source, *edits):
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    return source


def check(source, task=VECTOR_ADD, *, configs=None, hints=None, timeout=30.0):
    """The gate that decided: the load gate when it failed, else correctness (as plain dicts)."""
    return check_trusted(source, task, configs, hints=hints, seed=5, launch_timeout_s=timeout).to_dict()


def test_shipped_seeds_pass_load_and_correctness():
    for name in ("softmax", "matmul"):
        task = load_task(ROOT / "experiments" / "tasks" / f"{name}.yaml")
        source = task.seeds[0].read_text()
        gate = check(source, task)
        assert gate["name"] == "correctness" and gate["passed"], gate
        plan = plan_runs(task, kernel_configs(parse_param_space(source), cap=1), seed=5)
        assert gate["details"]["runs"] == len(plan)
        profiles = 7 if name == "softmax" else 6                  # fp32 tasks add the fp16-range profile
        # every profile at the smallest shape; normal, large and one seeded profile at the larger one
        assert len(plan) == profiles + 3 and plan[0]["repeat"]
        larger = [r["profile"] for r in plan[profiles:]]
        assert larger[:2] == ["normal", "large"] and larger[2] not in ("normal", "large", "wide")


def test_every_config_runs_and_hints_reach_launch():
    source = variant(VECTOR_ADD_SOURCE,
                     ("    n = a.numel()\n", "    assert num_warps == 8\n    n = a.numel() - (BLOCK == 1024)\n"))
    gate = check(source, configs=[{"BLOCK": 256}, {"BLOCK": 1024}], hints={"num_warps": 8})
    assert gate["name"] == "correctness" and not gate["passed"]
    assert "profile 'normal', config BLOCK=1024" in gate["reason"]
    assert "element 999" in gate["reason"] and "NaN" in gate["reason"]


BROKEN = {
    "wrong result": ((("a + b, mask", "a - b, mask"),),
                     ["shape {N=1000}, profile 'normal', config BLOCK=256", "1000 of 1000 elements differ",
                      "max abs err", "every element"]),
    "partial write": ((("a + b, mask=mask)", "a + b, mask=offs < n - 31)"),),
                      ["NaN", "last 31 elements (elements 969..)"]),
    "unmasked load": ((("a = tl.load(a_ptr + offs, mask=mask)", "a = tl.load(a_ptr + offs)"),),
                      ["out-of-bounds load on argument a_ptr at element offset 1000", "program (3, 0, 0)"]),
    "unmasked store": ((("tl.store(out_ptr + offs, a + b, mask=mask)", "tl.store(out_ptr + offs, a + b)"),),
                       ["out-of-bounds store on argument out_ptr at element offset 1000"]),
    "returns input": ((("    return out", "    return a"),), ["shares memory with input 'a'"]),
    "writes input": ((("tl.store(out_ptr + offs, a + b, mask=mask)",
                       "tl.store(out_ptr + offs, a + b, mask=mask)\n    tl.store(a_ptr + offs, b, mask=mask)"),),
                     ["modified its input 'a'"]),
    "cached output": ((("PARAMS =", "_CACHE = {}\nPARAMS ="),
                       ("    out = torch.empty_like(a)", "    out = _CACHE.setdefault(a.shape, torch.empty_like(a))")),
                      ["same buffer on two calls (a cached output)"]),
    "NaN output": ((("a + b, mask", "tl.where(offs == 7, float('nan'), a + b), mask"),),
                   ["NaN/Inf at 1 of 1000 positions", "element 7"]),
    "wrong dtype": ((("out = torch.empty_like(a)", "out = torch.empty_like(a, dtype=torch.float64)"),),
                    ["dtype torch.float64, the reference torch.float32"]),
    "wrong shape": ((("out = torch.empty_like(a)", "out = torch.empty(a.numel() + 1)"),),
                    ["shape (1001,), the reference (1000,)"]),
    "shape-specialised": ((("mask = offs < n", "mask = offs < 1000"),),
                          ["shape {N=4099}", "last 3099 elements"]),
    "counter": ((("PARAMS =", "_CALLS = [0]\nPARAMS ="),
                 ("    out = torch.empty_like(a)", "    _CALLS[0] += 1\n    out = torch.empty_like(a)"),
                 ("(a, b, out, n,", "(a, b, out, n, _CALLS[0],"), ("out_ptr, n, BLOCK", "out_ptr, n, calls, BLOCK"),
                 ("a + b, mask", "a + b + (calls > 1) * 1.0, mask")),
                ["nondeterministic", "1000 of 1000 elements change"]),
    "torch fallback": ((("    return out", "    return a + b"),), ["ran a torch op", "aten.add computes with torch"]),
    "copy in launch": ((("    n = a.numel()", "    a = a.view(2, -1).t().reshape(-1)\n    n = a.numel()"),),
                       ["aten.clone copies a tensor on the host"]),
    "reads a value on the host": ((("    n = a.numel()", "    n = a.numel() + int(a[0] > 10)"),),
                                  ["ran a torch op"]),
    "tensor as constexpr": ((("out_ptr, n, BLOCK", "out_ptr, n, T: tl.constexpr, BLOCK"),
                             ("(a, b, out, n,", "(a, b, out, n, a,")),
                            ["constexpr argument `T` is a Tensor"]),
    "order-dependent programs": ((("tl.store(out_ptr + offs, a + b, mask=mask)",
                                   "prev = tl.load(out_ptr + tl.program_id(0) * BLOCK - 1, mask=tl.program_id(0) > 0, "
                                   "other=0.0)\n    tl.store(out_ptr + offs, a + b + prev * 0.0, mask=mask)"),),
                                 ["data race in kernel add_kernel", "without atomics"]),
    "non-atomic split accumulation": ((("tl.store(out_ptr + offs, a + b, mask=mask)",
                                        "tl.store(out_ptr + offs, a + b, mask=mask)\n"
                                        "    tl.store(out_ptr, tl.load(out_ptr) * 1.0)"),),
                                      ["data race", "both store to"]),
    "raises": ((("    n = a.numel()", "    n = a.numel() // 0"),), ["launch raised ZeroDivisionError", "(line 20: n = a.numel() // 0)"]),
    "kernel error": ((("tl.arange(0, BLOCK)", "tl.arange(0, BLOCK + 1)"),),
                     ["launch raised", "power of 2", "(line 11: offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK + 1))"]),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_variants_fail_correctness_with_a_specific_reason(name):
    edits, expected = BROKEN[name]
    gate = check(variant(VECTOR_ADD_SOURCE, *edits))
    assert gate["name"] == "correctness" and not gate["passed"], gate
    for text in expected:
        assert text in gate["reason"], gate["reason"]


def test_endless_kernel_loop_is_stopped():
    """A while loop is counted trip by trip: an endless one ends at the trip limit or the time limit."""
    source = variant(VECTOR_ADD_SOURCE, ("    offs = tl.program_id(0)",
                                         "    i = 0\n    while i < n:\n        i = i * 1\n    offs = tl.program_id(0)"))
    gate = check(source, timeout=0.5)
    assert not gate["passed"]
    assert "did not finish within 0.5 s" in gate["reason"] or "ran more than 100000 trips" in gate["reason"]


def test_partial_write_of_a_2d_output_names_the_columns():
    task = load_task(ROOT / "experiments" / "tasks" / "softmax.yaml")
    source = variant(task.seeds[0].read_text(), ("tl.exp(x - m) / s, mask=mask)", "tl.exp(x - m) / s, mask=mask & (start + cols < n_cols - 31))"))
    gate = check(source, task)
    assert "shape {M=7, N=129}" in gate["reason"]
    assert "last 31 columns (columns 98..)" in gate["reason"]


LOAD_FAILURES = {
    "no kernel": ("import torch\nPARAMS = {'BLOCK': [1]}\ndef launch(a, b, *, BLOCK):\n    return a + b\n",
                  "no @triton.jit kernel"),
    "empty PARAMS list": (variant(VECTOR_ADD_SOURCE, ('"BLOCK": [256, 1024]', '"BLOCK": []')),
                          "PARAMS['BLOCK'] must be a non-empty list"),
    "import error": (variant(VECTOR_ADD_SOURCE, ("PARAMS =", "raise RuntimeError('boom')\nPARAMS =")),
                     "RuntimeError: boom at line 6"),
    "PARAMS mutated": (VECTOR_ADD_SOURCE + "\nPARAMS['BLOCK'].append(64)\n", "PARAMS changes at import time"),
    "launch signature": (variant(VECTOR_ADD_SOURCE, ("def launch(a, b, *,", "def launch(a, *,")),
                         "must accept the task inputs (a, b) positionally"),
    "no launch": (variant(VECTOR_ADD_SOURCE, ("def launch(", "def run(")), "no callable `launch"),
    "syntax error": ("PARAMS = {'BLOCK': [1]}\ndef launch(:\n", "does not parse: line 2"),
}


@pytest.mark.parametrize("name", sorted(LOAD_FAILURES))
def test_load_gate_rejects_malformed_modules(name):
    source, expected = LOAD_FAILURES[name]
    gate = check(source)
    assert gate["name"] == "load" and not gate["passed"]
    assert expected in gate["reason"], gate["reason"]


def test_tuple_params_are_the_same_space_as_lists():
    gate = check(variant(VECTOR_ADD_SOURCE, ('"BLOCK": [256, 1024]', '"BLOCK": (256, 1024)')))
    assert gate["name"] == "correctness" and gate["passed"], gate


def test_dispatch_guard_allows_allocation_and_views_poisons_empty_and_refuses_compute():
    x = torch.arange(6.0)
    guard = DispatchGuard(poison_empty=True)
    with guard:
        y = torch.empty(4)
        z = torch.zeros(3)
        v = x.view(2, 3).t()[0]
        with pytest.raises(TorchComputeRefused, match="aten.mul computes with torch"):
            x * 2
        with pytest.raises(TorchComputeRefused, match="copies a tensor"):
            x.view(2, 3).t().contiguous()
        with guard.paused():
            w = x * 2                             # the verifier's own torch calls pass
    assert torch.isnan(y).all() and (z == 0).all() and v.tolist() == [0.0, 3.0] and w[1] == 2
    assert torch.empty(2).shape == (2,) and guard.refused is not None    # nothing is patched outside


def test_describe_mismatch_names_where_errors_cluster():
    grid = np.zeros((8, 100), dtype=bool)
    assert describe_mismatch(~grid) == "every element"
    cols = grid.copy()
    cols[:, 69:] = True
    assert describe_mismatch(cols) == "last 31 columns (columns 69..)"
    rows = grid.copy()
    rows[4:] = True
    assert describe_mismatch(rows) == "last 4 rows (rows 4..)"
    rows[:] = False
    rows[:2] = True
    assert describe_mismatch(rows) == "first 2 rows"
    spot = grid.copy()
    spot[3, 5] = spot[6, 7] = True
    assert describe_mismatch(spot) == "2 of 800 elements (0.2%) in 2 rows between 3 and 6, 2 columns between 5 and 7; first at [3, 5]"


def test_compare_follows_allclose_and_rejects_new_non_finite_values():
    ref = torch.tensor([1.0, float("inf"), float("nan"), 0.0])
    assert compare(ref.clone(), ref, 1e-6, 1e-6) is None
    assert "NaN/Inf at 1" in compare(torch.tensor([1.0, float("inf"), float("nan"), float("inf")]), ref, 1e-6, 1e-6)
    assert "1 of 4 elements differ" in compare(torch.tensor([1.1, float("inf"), float("nan"), 0.0]), ref, 1e-6, 1e-6)
    assert compare(torch.tensor([1.0 + 1e-7, float("inf"), float("nan"), 0.0]), ref, 1e-6, 1e-6) is None
    assert "dtype" in compare(ref.double(), ref, 1e-6, 1e-6)
