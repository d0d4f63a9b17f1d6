"""The launch-signature record: parsing, validation errors, Triton inputs, capture from launches."""

from __future__ import annotations

import os

import pytest

from kernelfoundry.compiler.signature import LaunchSignature, SignatureError, parse_signature

EXAMPLE = {"kernel": "softmax_kernel",
           "args": [{"name": "x_ptr", "kind": "pointer", "dtype": "fp32", "div16": True},
                    {"name": "n_cols", "kind": "int", "dtype": "i32", "div16": False, "equals_one": False},
                    {"name": "stride", "kind": "int", "dtype": "i32", "div16": False, "equals_one": True},
                    {"name": "eps", "kind": "float", "dtype": "fp32"},
                    {"name": "BLOCK_N", "kind": "constexpr", "value": 1024},
                    {"name": "DT", "kind": "constexpr", "value": {"dtype": "fp16"}}],
           "num_warps": 4, "num_stages": 2}


def test_round_trip_and_canonical_key():
    sig = parse_signature(EXAMPLE)
    assert sig.to_dict() == EXAMPLE
    again = LaunchSignature.from_dict(sig.to_dict())
    assert again == sig and again.canonical() == sig.canonical()
    assert sig.describe() == "softmax_kernel(BLOCK_N=1024, DT=fp16, stride=1; num_warps=4, num_stages=2)"
    other = parse_signature({**EXAMPLE, "num_warps": 8})
    assert other.canonical() != sig.canonical()


def test_triton_inputs_follow_triton_specialisation():
    from triton.backends.amd.compiler import HIPBackend
    from triton.backends.compiler import BaseBackend
    import triton.language as tl
    raw = dict(EXAMPLE, args=[dict(EXAMPLE["args"][0], range32=True)] + EXAMPLE["args"][1:])
    sig = parse_signature(raw)
    signature, constexprs, attrs = sig.triton_inputs(BaseBackend.parse_attr)
    assert signature == {"x_ptr": "*fp32", "n_cols": "i32", "stride": "constexpr", "eps": "fp32",
                         "BLOCK_N": "constexpr", "DT": "constexpr"}
    assert constexprs["stride"] == 1 and constexprs["BLOCK_N"] == 1024 and constexprs["DT"] == tl.float16
    assert attrs == {(0,): [["tt.divisibility", 16]]}             # NVIDIA ignores the 2 GiB range flag
    _, _, amd_attrs = sig.triton_inputs(HIPBackend.parse_attr)
    assert amd_attrs == {(0,): [["tt.divisibility", 16], ["tt.pointer_range", 32]]}
    assert sig.options() == {"num_warps": 4, "num_ctas": 1, "enable_fp_fusion": True, "num_stages": 2}


@pytest.mark.parametrize("change, message", [
    ({"num_warps": 3}, "field 'num_warps' must be a power of two"),
    ({"num_stages": 0}, "field 'num_stages' must be an int in 1..8 or null"),
    ({"kernel": "not a name"}, "field 'kernel'"),
    ({"extra": 1}, "unknown field(s) 'extra'"),
    ({"args": [{"name": "x", "kind": "pointer", "dtype": "float32", "div16": True}]},
     "args[0] ('x') field 'dtype' must be a Triton pointer dtype"),
    ({"args": [{"name": "n", "kind": "int", "dtype": "i32", "div16": True}]},
     "args[0] ('n') field 'equals_one' is missing"),
    ({"args": [{"name": "n", "kind": "int", "dtype": "i32", "div16": True, "equals_one": True}]},
     "cannot both be true"),
    ({"args": [{"name": "B", "kind": "constexpr", "value": {"x": 1}}]}, "field 'value' as an object"),
    ({"args": [{"name": "f", "kind": "float", "dtype": "fp32", "div16": True}]},
     "field 'div16' is not a field of a float argument"),
    ({"args": [{"name": "a", "kind": "float", "dtype": "fp32"}, {"name": "a", "kind": "float", "dtype": "fp32"}]},
     "names a more than once"),
])
def test_validation_names_record_and_field(change, message):
    raw = {**EXAMPLE, **change}
    with pytest.raises(SignatureError) as err:
        parse_signature(raw, where="signatures['cfg'][0]")
    assert message in str(err.value)
    assert str(err.value).startswith("signatures['cfg'][0]")


def test_missing_keys_are_named():
    with pytest.raises(SignatureError, match="missing field\\(s\\) 'num_stages'"):
        parse_signature({k: v for k, v in EXAMPLE.items() if k != "num_stages"})


def test_capture_uses_triton_rules():
    """div16, ints equal to 1, None, bools, do_not_specialize, heuristics and defaults as Triton sees them."""
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton
    import triton.language as tl
    from kernelfoundry.compiler.capture import LaunchRecorder

    @triton.heuristics({"EVEN": lambda args: args["n"] % 16 == 0})
    @triton.jit(do_not_specialize=["m"])
    def k(x, y, n, m, one, flag, scale, maybe, wide: tl.int64, BLOCK: tl.constexpr, EVEN: tl.constexpr,
          D: tl.constexpr = 2):
        pass

    x = torch.empty(64)
    with LaunchRecorder() as rec:
        k[(1,)](x, x[1:], 32, 32, 1, True, 0.5, None, 1, BLOCK=16, num_warps=2)
    (sig,) = rec.unique()
    args = {a.name: a.to_dict() for a in sig.args}
    assert args["x"] == {"name": "x", "kind": "pointer", "dtype": "fp32", "div16": True, "range32": True}
    assert args["y"]["div16"] is False                                     # offset by 4 bytes
    assert args["n"] == {"name": "n", "kind": "int", "dtype": "i32", "div16": True, "equals_one": False}
    assert args["m"]["div16"] is False                                     # do_not_specialize
    assert args["one"]["equals_one"] is True
    assert args["flag"]["dtype"] == "u1" and args["scale"] == {"name": "scale", "kind": "float", "dtype": "fp32"}
    assert args["maybe"] == {"name": "maybe", "kind": "constexpr", "value": None}
    assert args["wide"] == {"name": "wide", "kind": "int", "dtype": "i64", "div16": False, "equals_one": False}
    assert args["EVEN"]["value"] is True and args["D"]["value"] == 2
    assert sig.num_warps == 2 and sig.num_stages is None
    assert rec.signatures[0] is sig                                        # dry run: recorded, not run


def test_capture_of_seed_launches(tmp_path):
    from kernelfoundry.compiler.capture import capture_task_signatures
    from kernelfoundry.task import load_task
    from .conftest import REPO
    task = load_task(REPO / "experiments/tasks/matmul.yaml")
    source = task.seed_sources()[0][1]
    sigs = capture_task_signatures(source, task, [{"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 4,
                                                   "num_stages": 1}])
    (sig,) = sigs["BLOCK_K=16,BLOCK_M=32,BLOCK_N=16,num_stages=1,num_warps=4"]
    args = {a.name: a for a in sig.args}
    assert sig.kernel == "matmul_kernel" and args["a_ptr"].dtype == "fp16"
    assert args["stride_ak"].equals_one and args["stride_bn"].equals_one   # contiguous inner strides
    assert args["BLOCK_M"].value == 32 and (sig.num_warps, sig.num_stages) == (4, 1)
