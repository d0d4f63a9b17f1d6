"""The trace gate: counts against hand-computed values, sampling, wave footprint, failures, child entry."""

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kernelfoundry.candidate import HINT_PARAMS, parse_param_space
from kernelfoundry.evaluate.child import ensure_interpreter, main, run_checks
from kernelfoundry.evaluate.records import ConfigTrace
from kernelfoundry.evaluate.trace import trace_candidate
from kernelfoundry.evaluate.trace_loops import HELPER_NAME, rewrite_loops, trip_plan
from kernelfoundry.task import load_task, task_from_dict

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"
N = 1 << 20
VECTOR_ADD = task_from_dict({
    "name": "vector_add", "reference": "import torch\ndef reference(a, b):\n    return a + b\n",
    "inputs": {"a": {"shape": ["N"], "dtype": "float32"}, "b": {"shape": ["N"], "dtype": "float32"}},
    "shapes": {"check": [{"N": 1000}], "target": [{"N": N}]},
    "tolerance": {"atol": 1e-6, "rtol": 1e-6}, "seeds": [str(KERNELS / "vector_add.py")]})
SOFTMAX = load_task(ROOT / "experiments" / "tasks" / "softmax.yaml")
MATMUL = load_task(ROOT / "experiments" / "tasks" / "matmul.yaml")


def trace(source, task, configs, *, trace_programs=4, timeout=60.0, expect_pass=True):
    ensure_interpreter()
    space = parse_param_space(source)
    hints = {name: space[name][0] for name in HINT_PARAMS if name in space}
    with tempfile.TemporaryDirectory() as tmp:
        gate, traces = trace_candidate(source, task, Path(tmp), kernel_configs=configs, hints=hints, seed=11,
                                       trace_programs=trace_programs, timeout=timeout)
    assert gate.passed == expect_pass, gate.reason
    return traces if expect_pass else gate


def test_rewrite_wraps_only_jit_loops_and_keeps_line_numbers():
    source = (KERNELS / "nested_loops.py").read_text() + "\ndef host():\n    for i in range(3):\n        pass\n"
    rewritten = rewrite_loops(source)
    assert rewritten.count("\n") == source.count("\n")
    assert rewritten.count(f"{HELPER_NAME}(") == 2
    assert f"for i in {HELPER_NAME}(range(OUTER)):" in rewritten and "    for i in range(3):" in rewritten


def test_trip_plan_runs_first_second_and_last_trip_weighted_to_the_full_count():
    assert trip_plan(3) == [(0, 1.0), (1, 1.0), (2, 1.0)]
    assert trip_plan(128) == [(0, 1.0), (1, 126.0), (127, 1.0)]
    assert sum(w for _, w in trip_plan(1536)) == 1536


@pytest.mark.parametrize("block", [256, 1024])
def test_vector_add_counts_match_hand_computed_values(block):
    (config_trace,) = trace((KERNELS / "vector_add.py").read_text(), VECTOR_ADD, [{"BLOCK": block}])
    (launch,) = config_trace.launches
    assert launch.kernel == "add_kernel" and launch.grid == (N // block, 1, 1)
    assert len(launch.sampled_programs) == 4 and {0, N // block - 1} <= set(launch.sampled_programs)
    for name in ("a_ptr", "b_ptr"):
        traffic = launch.traffic[name]
        assert traffic.load_bytes == block * 4 and traffic.store_bytes == 0
        assert traffic.load_sectors == block * 4 / 32 and traffic.unique_load_bytes == block * 4
        assert traffic.tensor_bytes == N * 4 and traffic.dtype == "fp32"
    assert launch.load_bytes == 2 * block * 4 and launch.traffic["out_ptr"].store_bytes == block * 4
    assert launch.elementwise_ops == block and launch.transcendental_ops == 0 and launch.loop_trips == 0
    assert launch.dot_flops == {} and launch.program_bytes_spread == 1.0
    assert launch.footprint["a_ptr"] == [[1 << i, 1 << i] for i in range(9)]   # a new block per program
    assert "out_ptr" not in launch.footprint


def test_nested_loop_weights_multiply_and_rereads_add_no_footprint():
    task = task_from_dict({
        "name": "nested", "reference": "import torch\ndef reference(x, bias):\n    return x.view(35, 32).sum(0) + 35 * bias\n",
        "inputs": {"x": {"shape": [1120], "dtype": "float32"}, "bias": {"shape": [32], "dtype": "float32"}},
        "shapes": {"check": [{}], "target": [{}]}, "seeds": [str(KERNELS / "nested_loops.py")]})
    (config_trace,) = trace((KERNELS / "nested_loops.py").read_text(), task, [{"BLOCK": 32}])
    launch = config_trace.launches[0]
    assert launch.loop_trips == 5 + 5 * 7
    assert launch.traffic["x_ptr"].load_bytes == 35 * 128 and launch.traffic["x_ptr"].unique_load_bytes == 35 * 128
    assert launch.traffic["bias_ptr"].load_bytes == 35 * 128 and launch.traffic["bias_ptr"].unique_load_bytes == 128
    assert launch.elementwise_ops == 2 * 35 * 32


@pytest.fixture(scope="module")
def matmul_traces():
    source = (KERNELS / "matmul_grouped.py").read_text()
    configs = [{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": g} for g in (1, 8)]
    return trace(source, MATMUL, configs)


def test_matmul_counts_per_program(matmul_traces):
    launch = matmul_traces[0].launches[0]
    assert launch.num_programs == 32 * 32
    assert launch.dot_flops == {"fp16": 2 * 128 * 128 * 4096}
    assert launch.dot_shapes == [(128, 128, 32, "fp16")]
    assert launch.loop_trips == 4096 // 32
    assert launch.dot_operand_bytes == (128 * 32 + 32 * 128) * 2
    assert launch.traffic["a_ptr"].load_bytes == 128 * 4096 * 2 == launch.traffic["a_ptr"].unique_load_bytes
    assert launch.traffic["c_ptr"].store_bytes == 128 * 128 * 2
    assert launch.max_block_elems == 128 * 128


def test_grouped_and_row_major_orders_have_different_wave_footprints(matmul_traces):
    at_64 = [{name: dict(map(tuple, pairs))[64] for name, pairs in t.launches[0].footprint.items()}
             for t in matmul_traces]
    assert at_64[0] == {"a_ptr": 2, "b_ptr": 32}    # row-major: 2 A row panels, 32 B column panels
    assert at_64[1] == {"a_ptr": 8, "b_ptr": 8}     # GROUP_M=8
    assert [w for w, _ in matmul_traces[0].launches[0].footprint["a_ptr"]] == [1 << i for i in range(9)]


def test_naive_softmax_reads_each_row_three_times():
    (config_trace,) = trace(SOFTMAX.seeds[0].read_text(), SOFTMAX, [{"BLOCK_N": 256}])
    launch = config_trace.launches[0]
    x, y = launch.traffic["x_ptr"], launch.traffic["y_ptr"]
    row_bytes = 393216 * 4
    assert x.load_bytes == 3 * row_bytes and x.unique_load_bytes == row_bytes
    assert y.store_bytes == row_bytes and y.unique_store_bytes == row_bytes
    assert launch.loop_trips == 3 * 393216 // 256
    assert launch.transcendental_ops == 2 * 393216 and launch.reduction_elems == 2 * 256
    assert x.tensor_bytes == 4096 * row_bytes


def test_two_kernel_launch_gives_two_launch_traces():
    (config_trace,) = trace((KERNELS / "softmax_two_kernels.py").read_text(), SOFTMAX, [{"BLOCK_N": 256}],
                            trace_programs=2)
    stats, normalize = config_trace.launches
    assert (stats.kernel, normalize.kernel) == ("stats_kernel", "normalize_kernel")
    assert stats.grid == (4096, 1, 1) and normalize.grid == (4096, 393216 // 256, 1)
    assert stats.traffic["stats_ptr"].store_bytes == 8 and normalize.traffic["stats_ptr"].load_bytes == 8


def test_tensor_descriptors_and_atomics_are_counted():
    task = task_from_dict({
        "name": "vector_sum", "reference": "import torch\ndef reference(x):\n    return x.sum()\n",
        "inputs": {"x": {"shape": ["N"], "dtype": "float32"}}, "shapes": {"check": [{"N": 1000}], "target": [{"N": N}]},
        "tolerance": {"atol": 1e-3, "rtol": 1e-4}, "seeds": [str(KERNELS / "sum_atomic_descriptor.py")]})
    source = (KERNELS / "sum_atomic_descriptor.py").read_text()
    (config_trace,) = trace(source, task, [{"BLOCK": 128}])
    copy, total = config_trace.launches
    assert copy.traffic["desc_in.base"].load_bytes == 512 and copy.traffic["desc_out.base"].store_bytes == 512
    assert total.traffic["out_ptr"].load_bytes == 4 and total.traffic["out_ptr"].store_bytes == 4
    assert total.reduction_elems == 128
    assert run_checks({"source": source, "task": task.to_dict(), "do_trace": False})["gates"][-1]["passed"]


def test_out_of_bounds_access_at_the_target_shape_fails_the_trace():
    source = (KERNELS / "vector_add.py").read_text().replace(
        "    n = a.numel()\n", "    n = a.numel() + 16 * (a.numel() > 100000)\n")
    gate = trace(source, VECTOR_ADD, [{"BLOCK": 256}], expect_pass=False)
    assert "shape {N=1048576}, config BLOCK=256: out-of-bounds load on argument a_ptr at element offset 1048576" \
        in gate.reason


def test_a_trace_past_its_time_limit_fails_the_gate():
    source = (KERNELS / "vector_add.py").read_text().replace(
        "    offs = tl.program_id(0)", "    i = 0\n    while i < n:\n        i = i * 1\n    offs = tl.program_id(0)")
    gate = trace(source, VECTOR_ADD, [{"BLOCK": 256}], timeout=0.5, expect_pass=False)
    assert "tracing did not finish within 0.5 s" in gate.reason


def _payload(**extra):
    return {"source": (KERNELS / "vector_add.py").read_text(), "task": VECTOR_ADD.to_dict(), "seed": 2,
            "do_trace": True, "kernel_configs": [{"BLOCK": 1024}, {"BLOCK": 256}], **extra}


def test_child_main_writes_the_result_json(tmp_path):
    (tmp_path / "in.json").write_text(json.dumps(_payload(trace_programs=3)))
    assert main([str(tmp_path / "in.json"), str(tmp_path / "out.json")]) == 0
    result = json.loads((tmp_path / "out.json").read_text())
    assert [g["name"] for g in result["gates"]] == ["load", "correctness", "trace"]
    assert result["param_space"] == {"BLOCK": [256, 1024], "num_warps": [4], "num_stages": [1]}
    traces = [ConfigTrace.from_dict(t) for t in result["traces"]]
    assert [t.config for t in traces] == [{"BLOCK": 1024}, {"BLOCK": 256}]
    assert all(len(t.launches[0].sampled_programs) == 3 for t in traces)
    assert not list(tmp_path.glob("*.tmp"))


def test_child_main_reports_a_bad_payload(tmp_path):
    (tmp_path / "in.json").write_text(json.dumps(_payload(kernel_configs=[{"BLOCK_X": 1}])))
    assert main([str(tmp_path / "in.json"), str(tmp_path / "out.json")]) == 1
    assert "BLOCK_X" in json.loads((tmp_path / "out.json").read_text())["error"]


def test_child_runs_as_a_module(tmp_path):
    (tmp_path / "in.json").write_text(json.dumps(_payload(kernel_configs=[{"BLOCK": 1024}])))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-m", "kernelfoundry.evaluate.child", str(tmp_path / "in.json"),
                           str(tmp_path / "out.json")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "out.json").read_text())
    assert all(g["passed"] for g in result["gates"]) and len(result["traces"]) == 1
