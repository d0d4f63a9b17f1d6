"""Branch-arm coverage: instrumentation of host and kernel branches, and the judge's rule."""

import ast

from kernelfoundry.harness.arms import RECORDER, ArmTransformer, _kf_arm, compile_host
from kernelfoundry.evaluate.judge.correctness import unchecked_paths
from kernelfoundry.records import ConfigTrace

HOST = '''\
import types
triton = types.SimpleNamespace(jit=lambda f: f)

@triton.jit
def kernel(x, n, BLOCK):
    if n > 4:
        pass

def pick(m):
    rows = m if m < 4096 else m * 5 // 8
    if m > 10:
        rows += 1
    for _ in range(m // 100):
        rows += 0
    return rows and rows
'''


def run_host(m: int) -> tuple[int, list[str]]:
    namespace = {"_kf_arm": _kf_arm}
    RECORDER.take()
    exec(compile_host(HOST, "cand.py"), namespace)
    RECORDER.take()
    value = namespace["pick"](m)
    return value, RECORDER.take()


def test_host_branches_record_their_arms_and_keep_their_values():
    small, arms_small = run_host(8)
    large, arms_large = run_host(5000)
    assert (small, large) == (8, 5000 * 5 // 8 + 1)
    kinds_small = {a.rsplit(":", 1)[1] for a in arms_small}
    assert {"then", "else"} <= kinds_small and all(a.startswith("host:") for a in arms_small)
    assert set(arms_large) - set(arms_small), "the large size takes arms the small one did not"
    assert any(a.endswith(":body") for a in arms_large) and not any(a.endswith(":body") for a in arms_small)


def test_jit_functions_are_left_to_the_interpreter():
    code = compile_host(HOST, "cand.py")
    kernel_code = next(c for c in code.co_consts if getattr(c, "co_name", "") == "kernel")
    pick_code = next(c for c in code.co_consts if getattr(c, "co_name", "") == "pick")
    assert "_kf_arm" not in kernel_code.co_names and "_kf_arm" in pick_code.co_names


def test_kernel_transformer_marks_if_without_else_on_both_sides():
    tree = ArmTransformer("k").visit(ast.parse("def f(n):\n    if n:\n        x = 1\n    return 0\n"))
    if_node = tree.body[0].body[0]
    assert len(if_node.body) == 2 and len(if_node.orelse) == 1
    assert if_node.orelse[0].value.args[0].value == "k:2:4:else"


def trace_with(arms: list[str]) -> ConfigTrace:
    return ConfigTrace(shape_index=0, shape={"M": 4096}, config={"BLOCK": 64}, launches=[], arms=arms)


def test_an_arm_only_the_target_shape_takes_fails_the_picked_config():
    records = [({"config": {"BLOCK": 64}}, {"kernels": [], "arms": ["k:5:4:then", "host:9:11:then"]})]
    why = unchecked_paths([trace_with(["k:5:4:then", "k:5:4:else"])], records, [{"BLOCK": 64, "num_warps": 4}])
    assert why and "the `else` branch at line 5 (in kernel k)" in why
    assert unchecked_paths([trace_with(["k:5:4:then"])], records, [{"BLOCK": 64}]) is None
    # arms checked with another config do not cover this one
    other = [({"config": {"BLOCK": 128}}, {"kernels": [], "arms": ["k:5:4:else"]})] + records
    assert unchecked_paths([trace_with(["k:5:4:else"])], other, [{"BLOCK": 64}]) is not None
