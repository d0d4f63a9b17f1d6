"""Value profiles, reproducibility and trace buffers (kernelfoundry.harness.inputs)."""

import torch

from kernelfoundry.harness.inputs import FILL_LIMIT_BYTES, PROFILES, InputFactory, empty_inputs
from kernelfoundry.task import task_from_dict

REFERENCE = "import torch\ndef reference(x, idx, flags):\n    return x\n"


def _task(target_m=8):
    return task_from_dict({
        "name": "mixed", "reference": REFERENCE,
        "inputs": {"x": {"shape": ["M", 64], "dtype": "float16"},
                   "idx": {"shape": ["M"], "dtype": "int32", "low": 3, "high": "N"},
                   "flags": {"shape": ["M"], "dtype": "bool"}},
        "shapes": {"check": [{"M": 4096, "N": 10}], "target": [{"M": target_m, "N": 10}]},
        "seeds": [__file__]})


def test_profiles_have_their_documented_statistics():
    factory = InputFactory(_task(), seed=0)
    env = {"M": 4096, "N": 10}
    stats = {p: factory.make(env, p)[0].float() for p in PROFILES}
    assert abs(stats["normal"].std().item() - 1.0) < 0.05
    assert stats["uniform"].min().item() >= -1.0 and stats["uniform"].max().item() <= 1.0
    assert 5e-7 < stats["tiny"].abs().mean().item() < 1.5e-6
    assert 500 < stats["large"].abs().mean().item() < 1500
    assert abs(stats["near_one"].mean().item() - 1.0) < 0.01 and stats["near_one"].std().item() < 0.02
    assert 0.85 < (stats["sparse"] == 0).float().mean().item() < 0.95
    for values in stats.values():
        assert values.shape == (4096, 64)


def test_integer_and_bool_inputs_respect_their_range_and_dtype():
    x, idx, flags = InputFactory(_task(), seed=1).make({"M": 4096, "N": 10}, "large")
    assert x.dtype == torch.float16 and idx.dtype == torch.int32 and flags.dtype == torch.bool
    assert idx.min().item() == 3 and idx.max().item() == 9
    assert 0.4 < flags.float().mean().item() < 0.6


def test_every_call_is_fresh_but_reproducible_from_the_seed():
    env = {"M": 4096, "N": 10}
    a, b = InputFactory(_task(), seed=7), InputFactory(_task(), seed=7)
    first, second = a.make(env), a.make(env)
    assert not torch.equal(first[0], second[0])
    assert torch.equal(first[0], b.make(env)[0]) and torch.equal(second[0], b.make(env)[0])
    assert not torch.equal(first[0], InputFactory(_task(), seed=8).make(env)[0])


def test_trace_inputs_are_uninitialised_floats_and_valid_integers():
    x, idx, flags = empty_inputs(_task(), {"M": 1000, "N": 10})
    assert x.shape == (1000, 64) and x.dtype == torch.float16
    assert idx.min().item() >= 3 and idx.max().item() < 10 and flags.dtype == torch.bool


def test_large_integer_trace_inputs_hold_the_constant_low_value():
    m = FILL_LIMIT_BYTES // 4 + 1        # int32 idx just over the fill limit
    x, idx, _ = empty_inputs(_task(target_m=m), {"M": m, "N": 10})
    assert x.numel() == m * 64            # 2 GB of untouched virtual memory
    assert idx.numel() == m and idx[0].item() == 3 and idx[-1].item() == 3
