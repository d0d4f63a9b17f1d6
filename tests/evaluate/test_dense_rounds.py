"""The runner-up's dense trace, started beside the pick's: used only when a later round asks for it,
cancelled when none does, and the verdict the same with or without it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from kernelfoundry.candidate import HINT_PARAMS, config_key
from kernelfoundry.evaluate import pipeline
from kernelfoundry.evaluate.dense_rounds import DenseRounds, runner_up
from kernelfoundry.records import GateResult
from kernelfoundry.task import load_task

REPO = Path(__file__).resolve().parents[2]


class FakeJobs:
    """run_job / judge pair: records each job's configs; a job over a config in *failing* fails, one over
    a config in *slow* takes that many seconds (or until cancelled)."""

    def __init__(self, failing=(), slow=None):
        self.jobs, self.cancelled, self.failing, self.slow = [], [], set(failing), dict(slow or {})
        self.lock = threading.Lock()

    def run(self, configs, cancel):
        with self.lock:
            self.jobs.append([config_key(c) for c in configs])
        end = time.monotonic() + max((self.slow.get(config_key(c), 0.0) for c in configs), default=0.0)
        while time.monotonic() < end:
            if cancel is not None and cancel.is_set():
                self.cancelled.append([config_key(c) for c in configs])
                return "cancelled"
            time.sleep(0.01)
        return [config_key(c) for c in configs]

    def judge(self, outcome, configs):
        keys = [config_key(c) for c in configs]
        assert outcome == keys, (outcome, keys)           # each job's outcome is judged with its own configs
        bad = [k for k in keys if k in self.failing]
        if bad:
            return GateResult(name="trace", passed=False, reason=f"{bad[0]} failed"), []
        return GateResult(name="trace", passed=True), [f"dense {k}" for k in keys]


A, B, C = {"BLOCK": 64}, {"BLOCK": 128}, {"BLOCK": 256}


def test_the_runner_up_traced_ahead_is_used_by_the_round_that_picks_it_without_a_second_job():
    jobs = FakeJobs()
    dense = DenseRounds(jobs.run, jobs.judge, side_by_side=lambda: 2)
    gate, traces = dense([A], B)
    assert gate.passed and traces == ["dense BLOCK=64"]
    gate, traces = dense([B], C)                       # the pick moved to the runner-up: no new job for it
    assert gate.passed and traces == ["dense BLOCK=128"]
    dense.close()
    assert sorted(map(tuple, jobs.jobs)) == [("BLOCK=128",), ("BLOCK=256",), ("BLOCK=64",)]


def test_without_two_idle_servers_nothing_is_traced_ahead():
    jobs = FakeJobs()
    dense = DenseRounds(jobs.run, jobs.judge, side_by_side=lambda: 1)
    dense([A], B)
    dense([B], None)
    dense.close()
    assert jobs.jobs == [["BLOCK=64"], ["BLOCK=128"]]


def test_a_trace_ahead_no_round_asks_for_is_cancelled_and_its_failure_decides_nothing():
    jobs = FakeJobs(failing={"BLOCK=128"}, slow={"BLOCK=128": 30.0})
    dense = DenseRounds(jobs.run, jobs.judge, side_by_side=lambda: 2)
    gate, traces = dense([A], B)
    assert gate.passed and traces == ["dense BLOCK=64"]
    began = time.monotonic()
    dense.close()
    assert jobs.cancelled == [["BLOCK=128"]] and time.monotonic() - began < 10


def test_a_failing_trace_ahead_fails_the_round_that_asks_for_it_as_its_own_job_would():
    jobs = FakeJobs(failing={"BLOCK=128"})
    dense = DenseRounds(jobs.run, jobs.judge, side_by_side=lambda: 2)
    dense([A], B)
    gate, traces = dense([C, B])            # one job over [C, B] reports B's failure (C passes)
    assert not gate.passed and gate.reason == "BLOCK=128 failed" and traces == []
    dense.close()


def test_the_runner_up_is_the_best_ranked_provisional_config_outside_the_picks():
    ranked = {"h100": [{"BLOCK": 64, "num_warps": 4}, {"BLOCK": 128, "num_warps": 8}, {"BLOCK": 256}],
              "a100": [{"BLOCK": 256}]}
    provisional = {"BLOCK=64", "BLOCK=128", "BLOCK=256"}
    assert runner_up(ranked, ["h100", "a100"], provisional, [A], HINT_PARAMS) == B
    assert runner_up(ranked, ["h100"], provisional - {"BLOCK=128"}, [A], HINT_PARAMS) == C
    assert runner_up(ranked, ["h100"], {"BLOCK=64"}, [A], HINT_PARAMS) is None


def test_tracing_the_runner_up_ahead_leaves_the_verdict_unchanged(monkeypatch):
    """A lazily traced softmax (four BLOCK_N configs): the same objective, picks and dense traces
    whether a runner-up is traced ahead (two idle servers) or not."""
    monkeypatch.setenv(pipeline.SIDE_BY_SIDE_ENV, "1")
    softmax = load_task(REPO / "experiments" / "tasks" / "softmax.yaml")
    source = (REPO / "experiments" / "tasks" / "kernels" / "softmax_naive.py").read_text() \
        .replace('"BLOCK_N": [256, 512]', '"BLOCK_N": [256, 512, 1024, 2048]')
    assert "[256, 512, 1024, 2048]" in source

    real = pipeline.run_sandboxed

    def run(idle: int):
        started = []

        def counting(module, payload, *args, **kwargs):
            if payload.get("kind") == "trace" and payload.get("dense"):
                started.append([config_key(c) for c in payload["kernel_configs"]])
            return real(module, payload, *args, **kwargs)
        monkeypatch.setattr(pipeline, "run_sandboxed", counting)
        monkeypatch.setattr(pipeline, "idle_fork_servers", lambda module: idle)
        monkeypatch.setattr(pipeline, "default_mode", lambda: "fork")
        result = pipeline.verify(softmax, source, ["h100"], compile=False)
        assert result.passed, result.reason
        dense = sorted((config_key(t.config), t.shape_index) for t in result.traces if not t.provisional)
        return result.objective, result.hardware["h100"].best_params, dense, started

    alone, ahead = run(0), run(2)
    assert alone[:3] == ahead[:3]
    assert all(len(job) == 1 for job in ahead[3]) and len(ahead[3]) == len(alone[3]) + 1


def test_a_search_whose_workers_fill_the_cpus_asks_for_no_side_by_side_jobs(monkeypatch):
    """The worker's Verifier hands its side_by_side flag to every verify (the session sets it False when
    the workers leave fewer than two CPUs each)."""
    from kernelfoundry.evaluate import verifier as verifier_module
    from kernelfoundry.evaluate.verifier import Verifier
    asked = []
    monkeypatch.setattr(verifier_module, "verify", lambda *a, **kw: asked.append(kw["side_by_side"]))
    relu = load_task(REPO / "experiments" / "tasks" / "relu.yaml")
    Verifier(relu, ["h100"], side_by_side=False).run_gates("source", seed=0)
    Verifier(relu, ["h100"]).run_gates("source", seed=0)
    assert asked == [False, None]          # None: the environment's default (pipeline.SIDE_BY_SIDE_ENV)
