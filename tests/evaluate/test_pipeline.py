"""The verify pipeline: gate order, static failures without a process, validation of the
child's (untrusted) result, and, with the performance model, a full pass on the seeds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernelfoundry.candidate import config_key
from kernelfoundry.errors import HardwareError
from kernelfoundry.evaluate import pipeline
from kernelfoundry.sandbox.channel import BlobReader
from kernelfoundry.evaluate.judge.correctness import Judge, plan_runs
from kernelfoundry.evaluate.pipeline import (default_limits, judge_checks, judge_trace, read_job, sandbox_failure,
                                             verify)
from kernelfoundry.sandbox.process import GiB, SandboxOutcome
from kernelfoundry.task import load_task, task_from_dict

REPO = Path(__file__).resolve().parents[2]
SOFTMAX = load_task(REPO / "experiments" / "tasks" / "softmax.yaml")
MATMUL = load_task(REPO / "experiments" / "tasks" / "matmul.yaml")
SOFTMAX_SEED = (REPO / "experiments" / "tasks" / "kernels" / "softmax_naive.py").read_text()
MATMUL_SEED = (REPO / "experiments" / "tasks" / "kernels" / "matmul_naive.py").read_text()
HAS_MODEL = importlib.util.find_spec("kernelfoundry.perfmodel.score") is not None


@pytest.fixture
def no_sandbox(monkeypatch):
    """Fail the test if the pipeline starts a process."""
    def refuse(*args, **kwargs):
        raise AssertionError("the sandbox must not run for this source")
    monkeypatch.setattr(pipeline, "run_sandboxed", refuse)


def test_static_failures_never_start_a_process(no_sandbox):
    r = verify(SOFTMAX, "import os\n" + SOFTMAX_SEED, ["h100"])
    assert (r.passed, r.gate) == (False, "hack") and "import os" in r.reason
    assert [g.name for g in r.gates] == ["hack"]
    r = verify(SOFTMAX, "def launch(:\n", ["h100"])
    assert r.gate == "load" and "does not parse: line 1" in r.reason
    no_params = "\n".join(line for line in SOFTMAX_SEED.splitlines() if not line.startswith("PARAMS"))
    r = verify(SOFTMAX, no_params, ["h100"])
    assert r.gate == "load" and "PARAMS" in r.reason and [g.name for g in r.gates] == ["hack", "load"]


def test_unknown_hardware_is_a_user_error(no_sandbox):
    with pytest.raises(HardwareError, match="nonesuch"):
        verify(SOFTMAX, SOFTMAX_SEED, ["nonesuch"])


def test_payload_configs_and_tune_off(monkeypatch):
    seen = []

    def fake(module, payload, limits, mode=None, extra_files=()):
        seen.append((module, payload, limits))
        return SandboxOutcome(ok=False, result=None, reason="exited with code 1 before writing a result",
                              exit_code=1)

    monkeypatch.setattr(pipeline, "run_sandboxed", fake)
    source = SOFTMAX_SEED.replace('"BLOCK_N": [256, 512]', '"BLOCK_N": [256, 512, 1024]')
    verify(SOFTMAX, source, ["h100"], max_kernel_configs=2)
    verify(SOFTMAX, source, ["h100"], tune=False)
    (module, first, limits), (_, second, _) = seen
    assert module == "kernelfoundry.evaluate.child.entry"
    assert len(first["kernel_configs"]) == 2 and first["kernel_configs"][0] == {"BLOCK_N": 256}
    assert second["kernel_configs"] == [{"BLOCK_N": 256}]
    assert first["hints"] == {"num_warps": 4, "num_stages": 1}
    assert 0 < first["launch_timeout_s"] < first["trace_timeout_s"] < limits.wall_s
    assert first["task"]["name"] == "softmax" and first["source"] == source
    assert "torch.softmax" not in first["task"]["reference"] and first["kind"] == "check"   # no reference inside
    assert first["runs"] and first["probe_configs"] == [{"BLOCK_N": 256}, {"BLOCK_N": 512}]


def test_default_limits_hold_the_target_tensors():
    assert default_limits(SOFTMAX).address_space_bytes >= 4 * GiB + 3 * 6 * GiB   # 6 GiB input
    assert default_limits(MATMUL).address_space_bytes == 8 * GiB
    # the outputs too: a launch allocates them (and intermediates of their size) at the target shape
    big_out = task_from_dict({"name": "outer", "reference": "import torch\ndef reference(a, b):\n"
                              "    return a[:, None] * b[None, :]\n",
                              "inputs": {"a": {"shape": ["M"], "dtype": "float32"},
                                         "b": {"shape": ["N"], "dtype": "float32"}},
                              "shapes": {"check": [{"M": 8, "N": 8}], "target": [{"M": 65536, "N": 32768}]},
                              "seeds": [__file__]})
    assert default_limits(big_out).address_space_bytes >= 4 * GiB + 3 * 8 * GiB
    # the timeout is CPU time (a verdict must not follow the machine's load); wall time is the backstop
    assert default_limits(SOFTMAX, 30.0).cpu_s == 30.0 and default_limits(SOFTMAX, 30.0).wall_s == 90.0


def test_child_time_limits_count_cpu_seconds_and_stop_a_waiting_call_on_the_wall_clock():
    import time

    from kernelfoundry.harness.loader import WALL_FACTOR, CandidateTimeout, time_limit
    for attempt in range(10):
        start = time.monotonic()
        with pytest.raises(CandidateTimeout) as stopped:
            with time_limit(0.3, "launch"):
                while True:                              # computing: the CPU limit stops it
                    pass
        if "it waited" not in str(stopped.value):
            break
        time.sleep(0.5)         # the machine gave it under a third of a CPU (the wall backstop fired first): again
    assert "launch did not finish within 0.3 s of CPU time" in str(stopped.value)
    assert time.monotonic() - start < 0.3 * WALL_FACTOR + 0.1
    start = time.monotonic()
    with pytest.raises(CandidateTimeout, match="it waited"):
        with time_limit(0.2, "launch"):
            time.sleep(5)                                # waiting uses no CPU: the wall backstop stops it
    assert 0.2 * WALL_FACTOR - 0.05 < time.monotonic() - start < 2.0
    with pytest.raises(CandidateTimeout, match=r"within 0.2 s$"):
        with time_limit(0.2, "launch", cpu=False):       # a device launch: wall time
            time.sleep(5)
    with time_limit(5, "launch"):                        # a call inside its limit is left alone
        sum(range(1000))
    time.sleep(0.7)                                      # and no timer outlives the block


def _outcome(result, **kw):
    return SandboxOutcome(ok=True, result=result, reason="", exit_code=0, **kw)


LOAD_OK = {"name": "load", "passed": True, "reason": ""}


@pytest.mark.parametrize("result,text", [
    ({"gates": [{"name": "correctness", "passed": True, "reason": ""}]}, "unexpected gates"),
    ({"gates": [LOAD_OK, {"name": "correctness", "passed": True, "reason": ""}], "check": {}}, "unexpected gates"),
    ({"gates": [LOAD_OK]}, "no check report"),
    ({"gates": [{"name": "load", "passed": "yes", "reason": ""}], "check": {}}, "unexpected gates"),
    ({"gates": "all good"}, "malformed"),
])
def test_forged_or_malformed_child_results_fail(result, text):
    gates, report = read_job(_outcome(result), "check")
    assert report is None and gates[0].name == "sandbox" and text in gates[0].reason


def test_a_failed_load_is_the_childs_verdict():
    gates, report = read_job(_outcome({"gates": [{"name": "load", "passed": False, "reason": "no launch"}]}), "check")
    assert [g.name for g in gates] == ["load"] and not gates[0].passed and report is not None


def _killed(progress, sig=None, killed_by=None):
    import signal as _signal
    return SandboxOutcome(ok=False, result=None, reason="killed", exit_code=None, progress=progress,
                          signal=_signal.SIGXCPU if sig == "xcpu" else sig, killed_by=killed_by)


@pytest.mark.parametrize("outcome,inconclusive", [
    (_killed("correctness", "xcpu"), True),              # the job's CPU budget: the verifier's plan of runs
    (_killed("correctness", killed_by="wall"), True),
    (_killed("correctness", killed_by="memory"), True),
    (_killed("load", "xcpu"), False),                    # importing the candidate is the candidate's own cost
    (_killed("correctness", 11), False),                 # a crash is the kernel's
    (_killed("correctness", killed_by="output"), False), # flooding the output is the kernel's
])
def test_a_check_job_past_the_verifiers_own_limits_is_inconclusive(monkeypatch, outcome, inconclusive):
    from kernelfoundry.records import INCONCLUSIVE, is_inconclusive
    monkeypatch.setattr(pipeline, "run_sandboxed", lambda module, payload, *a, **kw: outcome
                        if payload["kind"] == "check" else _outcome({"gates": [LOAD_OK], "trace": {"traces": []}}))
    result = pipeline.verify(SOFTMAX, SOFTMAX_SEED, ["h100"], compile=False)
    assert not result.passed and result.gate == ("correctness" if outcome.progress == "correctness" else "load")
    assert is_inconclusive(result.to_dict()) == inconclusive
    assert result.reason.startswith(INCONCLUSIVE) == inconclusive


def test_the_confirm_gates_span_job_past_its_cpu_limit_is_inconclusive(monkeypatch):
    """The span runs are the verifier's choice of shapes: their job running out of its CPU budget (every
    launch inside its own limit) is the verifier's limit, not a fault of the kernel."""
    from kernelfoundry.records import is_inconclusive
    real = pipeline.run_sandboxed

    def span_job_out_of_cpu(module, payload, limits, **kw):
        if payload["kind"] == "check" and any(r.get("span") for r in payload["runs"]):
            return _killed("correctness", "xcpu")
        return real(module, payload, limits, **kw)
    monkeypatch.setattr(pipeline, "run_sandboxed", span_job_out_of_cpu)
    r = verify(SOFTMAX, SOFTMAX_SEED, ["h100"], compile=False)
    assert (r.passed, r.gate) == (False, "confirm") and is_inconclusive(r.to_dict())
    assert [g.name for g in r.gates][-2:] == ["model", "confirm"]


GOOD_TRACE = {"shape_index": 0, "shape": {"M": 4096, "N": 393216}, "config": {"BLOCK_N": 256}, "launches": []}


@pytest.mark.parametrize("report,text", [
    ({"traces": [dict(GOOD_TRACE, config={"BLOCK_N": 8})], "error": None}, "was not asked for"),
    ({"traces": [], "error": None}, "traces are missing"),
    ({"traces": "x", "error": None}, "no trace list"),
    ({"traces": [dict(GOOD_TRACE, launches=[{"kernel": "k", "grid": [1, 1, 1], "num_programs": 5}])],
      "error": None}, "disagrees with its grid"),
    ({"traces": [dict(GOOD_TRACE, launches=[{"kernel": "k", "grid": [1, 1, 1], "num_programs": 1, "tensors": [],
                                             "programs": [{"pid": 0, "accesses": [0, "object", [6]]}]}])],
      "error": None}, "not allowed"),
    ({"traces": [dict(GOOD_TRACE, launches=[{"kernel": "k", "grid": [1, 1, 1], "num_programs": 1, "tensors": [],
                                             "programs": [{"pid": 0, "accesses": [0, "int64", [6]]}]}])],
      "error": None}, "lies outside"),
])
def test_forged_traces_fail_the_sandbox_gate(report, text):
    gate, traces = judge_trace(report, _outcome({}), [{"BLOCK_N": 256}], SOFTMAX, 0)
    assert gate.name == "sandbox" and not gate.passed and text in gate.reason, gate.reason


def test_forged_check_reports_fail_the_sandbox_gate():
    plan = plan_runs(SOFTMAX, [{"BLOCK_N": 256}], seed=3)
    gate = judge_checks(SOFTMAX, plan, {"runs": [{}] * (len(plan) + 1)}, _outcome({}), seed=3)
    assert gate.name == "sandbox" and "more runs than were planned" in gate.reason
    gate = judge_checks(SOFTMAX, plan, {"runs": [], "failed_run": None, "error": None}, _outcome({}), seed=3)
    assert gate.name == "sandbox" and "missing" in gate.reason
    lie = {"runs": [{"inputs_before": ["0" * 32], "inputs_after": [], "outputs": []}]}
    gate = judge_checks(SOFTMAX, plan, lie, _outcome({}), seed=3)
    assert gate.name == "sandbox" and "inputs differ" in gate.reason


def test_killed_child_is_attributed_to_its_last_gate():
    killed = SandboxOutcome(ok=False, result=None, reason="killed: memory over 4 GB", exit_code=None,
                            signal=9, killed_by="memory", progress="correctness")
    gate = sandbox_failure(killed)
    assert gate.name == "correctness" and gate.reason == "the candidate's process was killed: memory over 4 GB"
    crashed = SandboxOutcome(ok=False, result=None, reason="crashed with signal 11 (SIGSEGV)", exit_code=None,
                             signal=11, output_tail="Fatal Python error: Segmentation fault\n")
    gate = sandbox_failure(crashed)
    assert gate.name == "sandbox" and "signal 11" in gate.reason and "Segmentation fault" in gate.reason
    errored = _outcome({"gates": [], "error": "KeyError: 'task'"}, progress="load")
    assert read_job(errored, "check")[0][0].name == "load"


def test_seed_end_to_end():
    """The matmul seed passes the sandboxed gates; with the model, every gate, deterministically."""
    r = verify(MATMUL, MATMUL_SEED, ["h100", "ascend910b2"])
    names = [g.name for g in r.gates]
    assert names[:4] == ["hack", "load", "correctness", "trace"], r.reason
    assert all(g.passed for g in r.gates[:4]), r.reason
    assert r.traces and {t.config["BLOCK_M"] for t in r.traces} == {16, 32}
    assert r.gates[2].details["runs"] >= 12 and r.gates[2].details["span_runs"] == 0   # spans run in confirm
    assert r.gates[2].details["configs"] == len({config_key(t.config) for t in r.traces})
    assert r.param_space["BLOCK_M"] == [16, 32]
    if not HAS_MODEL:
        assert r.gate == "model" and "not available" in r.reason
        return
    assert r.passed and r.gate is None and names[4] == "model", r.reason
    confirm = next(g for g in r.gates if g.name == "confirm")
    assert confirm.passed and confirm.details["span_runs"] >= 1 and confirm.details["picked"]
    assert r.objective is not None and r.objective > 0
    assert set(r.hardware) == {"h100", "ascend910b2"}
    for score in r.hardware.values():
        assert score.latency_s > 0 and 0 < score.sol_fraction <= 1.0
        assert set(score.best_params) == {"BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"}
    assert set(r.descriptors) == {"tiling", "memory_pattern"}
    again = verify(MATMUL, MATMUL_SEED, ["h100", "ascend910b2"])
    assert again.objective == r.objective and again.descriptors == r.descriptors


def test_a_trace_killed_for_the_verifiers_own_memory_is_inconclusive(monkeypatch):
    """The trace at the target shapes is the verifier's instrument: its memory or time running out says
    nothing about the kernel. The verdict fails (nothing unverified is admitted) and says it is inconclusive."""
    from kernelfoundry.records import INCONCLUSIVE, is_inconclusive
    real = pipeline.run_sandboxed

    def trace_out_of_memory(module, payload, limits, **kw):
        if payload["kind"] == "trace":
            return SandboxOutcome(ok=False, result=None, reason="killed: memory over 4 GB", exit_code=None,
                                  killed_by="memory", progress="trace")
        return real(module, payload, limits, **kw)
    monkeypatch.setattr(pipeline, "run_sandboxed", trace_out_of_memory)
    r = verify(SOFTMAX, SOFTMAX_SEED, ["h100"], compile=False)
    assert (r.passed, r.gate) == (False, "trace") and r.inconclusive and is_inconclusive(r.to_dict())
    assert r.reason.startswith(INCONCLUSIVE) and "memory over 4 GB" in r.reason
    assert [g.name for g in r.gates][-2:] == ["correctness", "trace"] and r.gates[-2].passed


def test_the_trace_childs_own_time_limit_is_inconclusive_a_kernel_error_is_not():
    from kernelfoundry.records import INCONCLUSIVE
    outcome = SandboxOutcome(ok=True, result={}, reason="", exit_code=0)
    timed_out = {"traces": [], "error": "shape {x_0=4096}, config BLOCK_N=256: tracing did not finish within "
                                        "48 s; even with sampled programs and loops the kernel runs too long"}
    gate, _ = judge_trace(timed_out, outcome, [{"BLOCK_N": 256}], SOFTMAX, 0)
    assert not gate.passed and gate.details.get("inconclusive") and gate.reason.startswith(INCONCLUSIVE)
    raised = {"traces": [], "error": "shape {x_0=4096}, config BLOCK_N=256: launch raised ValueError: "
                                     "tracing did not finish within 1 s"}          # the kernel's own words
    gate, _ = judge_trace(raised, outcome, [{"BLOCK_N": 256}], SOFTMAX, 0)
    assert not gate.passed and not gate.details.get("inconclusive") and not gate.reason.startswith(INCONCLUSIVE)
    # an allocation the trace child's address space refused at the target shape is the verifier's limit too
    refused = {"traces": [], "error": "shape {x_2=1024}, config BLOCK_K=64: launch raised RuntimeError: [enforce "
                                      "fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                                      "memory: you tried to allocate 8556412928 bytes."}
    gate, _ = judge_trace(refused, outcome, [{"BLOCK_K": 64}], SOFTMAX, 0)
    assert not gate.passed and gate.details.get("inconclusive") and gate.reason.startswith(INCONCLUSIVE)
    # so is the trace's data file outgrowing the sandbox's file limit (the candidate cannot write files)
    too_large = {"traces": [], "error": "shape {M=3000, N=1000, K=5056}, config TILE=256x128x64: launch raised "
                                        "OSError: [Errno 27] File too large."}
    gate, _ = judge_trace(too_large, outcome, [{"TILE": "256x128x64"}], SOFTMAX, 0)
    assert not gate.passed and gate.details.get("inconclusive") and gate.reason.startswith(INCONCLUSIVE)


RELU = load_task(REPO / "experiments" / "tasks" / "relu.yaml")
RELU_TWO_BLOCKS = (REPO / "experiments" / "tasks" / "kernels" / "relu_naive.py").read_text() \
    .replace("[256, 512]", "[4096, 256]")
#: Wrong for BLOCK=256 only where the tensor holds 4000 to 10^6 elements: right at the smallest check
#: shape (5 x 333), wrong at the larger one (64 x 257), right at the targets (where the trace's check of
#: the target launch's outputs would see it first).
RELU_WRONG_AT_LARGER = RELU_TWO_BLOCKS.replace(
    "    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)",
    "    y = tl.where(x > 0, x, 0.0)\n    if BLOCK == 256:\n        if n_elements > 4000:\n"
    "            if n_elements < 1000000:\n                y = x\n"
    "    tl.store(y_ptr + offs, y, mask=mask)")


@pytest.mark.skipif(not HAS_MODEL, reason="the confirm gate needs the model's picks")
def test_a_picked_config_runs_every_check_shape_before_it_is_reported():
    """A config past the default runs at the smallest check shape in the check job; once the model picks
    it, at the larger check shapes too (confirm), so a config wrong only there is never reported."""
    honest = verify(RELU, RELU_TWO_BLOCKS, ["h100"], compile=False)
    assert honest.passed and honest.hardware["h100"].best_params["BLOCK"] == 256, honest.reason
    checks = next(g for g in honest.gates if g.name == "correctness")
    assert checks.details["configs"] == 2
    confirm = next(g for g in honest.gates if g.name == "confirm")
    assert confirm.details["check_runs"] == len(RELU.check_shapes) - 1
    wrong = verify(RELU, RELU_WRONG_AT_LARGER, ["h100"], compile=False)
    assert (wrong.passed, wrong.gate) == (False, "confirm")
    assert "shape {M=64, N=257}, profile 'normal', config BLOCK=256" in wrong.reason
