"""The trace gate: counts against hand-computed values, sampling, wave footprint, integrity, failures."""

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kernelfoundry.evaluate.child.entry import main
from kernelfoundry.evaluate.inprocess import check_trusted, trace_trusted
from kernelfoundry.harness.payload import child_task
from kernelfoundry.evaluate.trace.loop_plan import trip_plan, trip_weight
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
    gate, traces = trace_trusted(source, task, configs, seed=11, trace_programs=trace_programs, timeout=timeout)
    assert gate.passed == expect_pass, gate.reason
    return traces if expect_pass else gate


def test_trip_plan_samples_random_middle_trips_weighted_to_the_full_count():
    assert trip_plan(6, random.Random(0)) == [0, 1, 2, 3, 4, 5]
    plans = {tuple(trip_plan(128, random.Random(seed))) for seed in range(20)}
    assert len(plans) > 10, "middle trips must vary with the seed (a kernel cannot know which are looked at)"
    for plan in plans:       # trips 0 and 1 (the witness), three random middle trips, the last
        assert plan[:2] == (0, 1) and plan[-1] == 127 and len(plan) == 6 and list(plan) == sorted(set(plan))
        assert sum(trip_weight(128, list(plan), i) for i in plan) == pytest.approx(128)


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
    approx = pytest.approx
    assert launch.loop_trips == approx(5 + 5 * 7)
    assert launch.traffic["x_ptr"].load_bytes == approx(35 * 128) == launch.traffic["x_ptr"].unique_load_bytes
    assert launch.traffic["bias_ptr"].load_bytes == approx(35 * 128)
    assert launch.traffic["bias_ptr"].unique_load_bytes == approx(128)
    assert launch.elementwise_ops == approx(2 * 35 * 32)


@pytest.fixture(scope="module")
def matmul_traces():
    source = (KERNELS / "matmul_grouped.py").read_text()
    configs = [{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": g} for g in (1, 8)]
    return trace(source, MATMUL, configs)


def test_matmul_counts_per_program(matmul_traces):
    launch = matmul_traces[0].launches[0]
    assert launch.num_programs == 32 * 32
    approx = pytest.approx
    assert launch.dot_flops == {"fp16": approx(2 * 128 * 128 * 4096)}
    assert launch.dot_shapes == [(128, 128, 32, "fp16")]
    assert launch.loop_trips == approx(4096 // 32)
    assert launch.dot_operand_bytes == (128 * 32 + 32 * 128) * 2
    assert launch.traffic["a_ptr"].load_bytes == approx(128 * 4096 * 2) == launch.traffic["a_ptr"].unique_load_bytes
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
    approx = pytest.approx
    assert x.load_bytes == approx(3 * row_bytes) and x.unique_load_bytes == approx(row_bytes)
    assert y.store_bytes == approx(row_bytes) and y.unique_store_bytes == approx(row_bytes)
    assert launch.loop_trips == approx(3 * 393216 // 256)
    assert launch.transcendental_ops == approx(2 * 393216) and launch.reduction_elems == 2 * 256
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
    assert check_trusted(source, task).passed


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
    assert "tracing did not finish within 0.5 s" in gate.reason or "ran more than 100000 trips" in gate.reason


def _payload(**extra):
    return {"source": (KERNELS / "vector_add.py").read_text(), "task": child_task(VECTOR_ADD.to_dict()), "seed": 2,
            "kind": "trace", "kernel_configs": [{"BLOCK": 1024}, {"BLOCK": 256}], **extra}


def test_child_main_writes_the_result_json_and_the_data_file(tmp_path):
    (tmp_path / "in.json").write_text(json.dumps(_payload(trace_programs=3)))
    assert main([str(tmp_path / "in.json"), str(tmp_path / "out.json")]) == 0
    result = json.loads((tmp_path / "out.json").read_text())
    assert [g["name"] for g in result["gates"]] == ["load"] and result["trace"]["error"] is None
    assert result["param_space"] == {"BLOCK": [256, 1024], "num_warps": [4], "num_stages": [1]}
    records = result["trace"]["traces"]
    assert [t["config"] for t in records] == [{"BLOCK": 1024}, {"BLOCK": 256}]
    assert all(len(t["launches"][0]["programs"]) == 3 for t in records)
    assert (tmp_path / "DATA.bin").stat().st_size > 0 and not list(tmp_path.glob("*.tmp"))


def test_child_refuses_a_task_carrying_its_reference(tmp_path):
    """The child never receives the reference: a payload with one is a verifier bug, refused."""
    (tmp_path / "in.json").write_text(json.dumps({**_payload(), "task": VECTOR_ADD.to_dict()}))
    assert main([str(tmp_path / "in.json"), str(tmp_path / "out.json")]) == 1
    assert "reference stub" in json.loads((tmp_path / "out.json").read_text())["error"]


def test_child_main_reports_a_bad_payload(tmp_path):
    (tmp_path / "in.json").write_text(json.dumps(_payload(kernel_configs=[{"BLOCK_X": 1}])))
    assert main([str(tmp_path / "in.json"), str(tmp_path / "out.json")]) == 1
    assert "BLOCK_X" in json.loads((tmp_path / "out.json").read_text())["error"]


def test_child_runs_as_a_module(tmp_path):
    (tmp_path / "in.json").write_text(json.dumps(_payload(kernel_configs=[{"BLOCK": 1024}])))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-m", "kernelfoundry.evaluate.child.entry", str(tmp_path / "in.json"),
                           str(tmp_path / "out.json")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "out.json").read_text())
    assert all(g["passed"] for g in result["gates"]) and len(result["trace"]["traces"]) == 1


# ---- integrity: what a candidate cannot do to the trace ------------------------------------------------

def _edit(source, *edits):
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    return source


def test_while_loops_count_their_trips_like_for_loops():
    """A `while` loop doing the same work as a `for` loop is counted the same (it used to count 0 trips)."""
    source = (KERNELS / "nested_loops.py").read_text()
    while_source = _edit(source, ("        for j in range(INNER):\n",
                                  "        j = 0\n        while j < INNER:\n"),
                         ("+ tl.load(bias_ptr + cols)\n", "+ tl.load(bias_ptr + cols)\n            j += 1\n"))
    task = task_from_dict({
        "name": "nested", "reference": "import torch\ndef reference(x, bias):\n    return x.view(35, 32).sum(0) + 35 * bias\n",
        "inputs": {"x": {"shape": [1120], "dtype": "float32"}, "bias": {"shape": [32], "dtype": "float32"}},
        "shapes": {"check": [{}], "target": [{}]}, "seeds": [str(KERNELS / "nested_loops.py")]})
    (a,), (b,) = trace(source, task, [{"BLOCK": 32}]), trace(while_source, task, [{"BLOCK": 32}])
    la, lb = a.launches[0], b.launches[0]
    assert lb.loop_trips == pytest.approx(40) and la.loop_trips == pytest.approx(40)
    assert lb.traffic["x_ptr"].load_bytes == pytest.approx(la.traffic["x_ptr"].load_bytes)


def test_an_idle_trip_at_a_fixed_index_cannot_hide_the_work():
    """The sampled middle trips are random: a max pass that skips its loads on trip 1 (the old fixed
    middle sample, standing for all middle trips) now costs about one trip in n, as it should."""
    source = SOFTMAX.seeds[0].read_text()
    (honest,) = trace(source, SOFTMAX, [{"BLOCK_N": 256}])
    first_pass = "        x = tl.load(x_row + start + cols, mask=mask, other=float(\"-inf\"))\n        row_max"
    cheat = _edit(source, (first_pass, first_pass.replace("mask=mask,", "mask=mask & (start != BLOCK_N),")))
    (idle,) = trace(cheat, SOFTMAX, [{"BLOCK_N": 256}])
    ratio = idle.launches[0].traffic["x_ptr"].load_bytes / honest.launches[0].traffic["x_ptr"].load_bytes
    assert 0.99 < ratio <= 1.0


def test_a_dead_first_load_does_not_collapse_the_wave_footprint(matmul_traces):
    """Every program first loading the same element of A used to make the wave pass see one shared A
    panel (the footprint collapsed, the model predicted L2 hits); anchors now come from every load site."""
    source = _edit((KERNELS / "matmul_grouped.py").read_text(),
                   ("    for k in range(", "    dead = tl.load(a_ptr)\n    for k in range("))
    (traced,) = trace(source, MATMUL, [{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 1}])
    honest = dict(map(tuple, matmul_traces[0].launches[0].footprint["a_ptr"]))
    cheat = dict(map(tuple, traced.launches[0].footprint["a_ptr"]))
    assert honest[64] == 2 and all(cheat[w] >= honest[w] for w in honest)


def test_dots_are_scored_at_the_precision_their_operands_were_loaded_at():
    """fp32 data cast to fp16 right before tl.dot is still an fp32 dot (TF32 rate), not an fp16 one."""
    task = load_task(ROOT / "experiments" / "tasks" / "gemm_sigmoid_sum_lse.yaml")
    source = task.seeds[0].read_text()
    (honest,) = trace(source, task, [{"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "BLOCK": 256}])
    cast = _edit(source, ("acc += tl.dot(a, b)", "acc += tl.dot(a.to(tl.float16), b.to(tl.float16))"))
    (casted,) = trace(cast, task, [{"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "BLOCK": 256}])
    assert set(honest.launches[0].dot_flops) == {"fp32"}
    assert set(casted.launches[0].dot_flops) == {"fp32"}
    assert casted.launches[0].dot_flops["fp32"] == pytest.approx(honest.launches[0].dot_flops["fp32"])
    # an int8 dot (fed by a quantising cast) of fp32 data is an fp32 dot too, not one at the int8 rate
    quant = _edit(source, ("acc += tl.dot(a, b)", "acc += tl.dot(a.to(tl.int8), b.to(tl.int8)).to(tl.float32)"))
    (int8,) = trace(quant, task, [{"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "BLOCK": 256}])
    assert set(int8.launches[0].dot_flops) == {"fp32"}
    assert int8.launches[0].dot_flops["fp32"] == pytest.approx(honest.launches[0].dot_flops["fp32"])


def test_trace_inputs_hold_real_values():
    """Skipping work on all-zero tiles (what untouched buffers read as) no longer hides it."""
    source = _edit((KERNELS / "vector_add.py").read_text(),
                   ("    b = tl.load(b_ptr + offs, mask=mask)",
                    "    if tl.max(tl.abs(a), axis=0) > 0:\n        b = tl.load(b_ptr + offs, mask=mask)\n"
                    "    else:\n        b = tl.zeros_like(a)"))
    (traced,) = trace(source, VECTOR_ADD, [{"BLOCK": 1024}])
    assert traced.launches[0].traffic["b_ptr"].load_bytes == 1024 * 4


def test_the_kernel_globals_are_private():
    """The interpreter used to copy its own globals (np, inspect, triton...) into the candidate's module on
    the first launch, where host code could reach them by bare name."""
    import importlib.util
    import tempfile
    from kernelfoundry.evaluate.child.trace_hooks import Session, active
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kf_priv_test.py"
        path.write_text((KERNELS / "vector_add.py").read_text())
        spec = importlib.util.spec_from_file_location("kf_priv_test", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        before = set(vars(module))
        with active(Session()):
            module.launch(torch.ones(300), torch.ones(300), BLOCK=256, num_warps=4, num_stages=1)
        assert set(vars(module)) == before
        assert "np" not in vars(module) and "_kf_for" not in vars(module)


def test_fork_server_warm_up_runs_clean():
    """The fork servers' warm-up (a trusted kernel through a check and a trace job) must succeed, or
    every sandboxed job silently starts cold again."""
    from kernelfoundry.evaluate.child.entry import run_job
    from kernelfoundry.evaluate.warmup import warm_up
    assert warm_up(run_job) is None


def test_interpreter_objects_in_a_module_are_not_a_clash():
    """Only a module binding the interpreter's names to other objects is refused: Triton's own rewrite
    copies the genuine ones into every module whose function it rewrote."""
    from triton.runtime import interpreter as interp
    from kernelfoundry.evaluate.child.loop_hooks import ReservedName, kernel_globals
    genuine = {"interpreter_semantic": interp.interpreter_semantic,
               "_InterpreterComparison": interp._InterpreterComparison, "x": 1}
    namespace = kernel_globals(genuine, interp)
    assert namespace["interpreter_semantic"] is interp.interpreter_semantic and namespace["x"] == 1
    for name in ("interpreter_semantic", "_InterpreterComparison"):
        with pytest.raises(ReservedName, match=name):
            kernel_globals({**genuine, name: object()}, interp)


POLLUTE_THEN_CHECK = '''
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
import triton.language.standard as standard

@triton.jit
def total(x, o):
    tl.store(o, tl.sum(tl.load(x + tl.arange(0, 16)), axis=0))

total[(1,)](torch.ones(16), torch.zeros(1))      # unpatched rewrite of tl.sum: standard's globals grow
assert "interpreter_semantic" in vars(standard)
from kernelfoundry.evaluate.inprocess import check_trusted
from kernelfoundry.task import load_task
task = load_task(sys.argv[1])
gate = check_trusted(task.seeds[0].read_text(), task)   # the seed's tl.max is rewritten by the patched rewrite
print("PASSED" if gate.passed else "FAILED " + gate.reason)
'''


def test_a_trusted_check_after_a_direct_launch_in_the_same_process(tmp_path):
    """A kernel launched in-process before the verifier's rewrite was installed left the interpreter's
    objects in triton.language.standard; the next standard function rewritten raised ReservedName."""
    from kernelfoundry import REPO_DIR
    script = tmp_path / "pollute_then_check.py"
    script.write_text(POLLUTE_THEN_CHECK)
    proc = subprocess.run([sys.executable, str(script), str(REPO_DIR / "experiments/tasks/softmax.yaml")],
                          capture_output=True, text=True, timeout=300, cwd=REPO_DIR,
                          env={**os.environ, "PYTHONPATH": str(REPO_DIR)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "PASSED", proc.stdout[-2000:]
