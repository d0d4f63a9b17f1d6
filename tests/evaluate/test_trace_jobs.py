"""The first trace in two jobs beside the check job: configs dealt out, judgements merged as one job's,
and the verdict the same with one job or two."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernelfoundry.candidate import config_key
from kernelfoundry.evaluate import pipeline
from kernelfoundry.evaluate.trace_jobs import (jit_kernels, merge_judgements, split_configs, stopped_at,
                                              trace_job_count)
from kernelfoundry.records import ConfigTrace, GateResult
from kernelfoundry.task import load_task

REPO = Path(__file__).resolve().parents[2]
HAS_MODEL = importlib.util.find_spec("kernelfoundry.perfmodel.score") is not None
CONFIGS = [{"BLOCK": b} for b in (64, 128, 256, 512, 1024)]


def _trace(shape: int, config: dict, seconds: float = 1.0) -> ConfigTrace:
    return ConfigTrace(shape_index=shape, shape={"N": 1}, config=dict(config), launches=[], seconds=seconds)


def test_configs_are_dealt_out_alternately_without_an_empty_job():
    assert split_configs(CONFIGS, 2) == [CONFIGS[0::2], CONFIGS[1::2]]
    assert split_configs(CONFIGS, 1) == [CONFIGS]
    assert split_configs(CONFIGS[:1], 2) == [CONFIGS[:1]]


def test_provisional_traces_of_a_kernel_chain_stay_in_one_job_to_share_their_waves(monkeypatch):
    monkeypatch.setattr("kernelfoundry.evaluate.trace_jobs.idle_fork_servers", lambda module: 3)
    assert trace_job_count("m", 4, "fork") == 2
    assert trace_job_count("m", 4, "fork", shares_waves=True) == 1
    assert trace_job_count("m", 1, "fork") == 1 and trace_job_count("m", 4, "spawn") == 1
    monkeypatch.setattr("kernelfoundry.evaluate.trace_jobs.idle_fork_servers", lambda module: 2)
    monkeypatch.setattr("kernelfoundry.evaluate.trace_jobs.prestart_fork_servers", lambda *a: None)
    assert trace_job_count("m", 4, "fork") == 1
    chain = "import triton\n@triton.jit\ndef a(x): pass\n@triton.jit(do_not_specialize=[0])\ndef b(x): pass\ndef launch(): pass\n"
    assert jit_kernels(chain) == 2 and jit_kernels("def (") == 0


def test_passing_jobs_merge_into_one_jobs_gate():
    a, b = split_configs(CONFIGS, 2)
    judged = [(a, GateResult(name="trace", passed=True, seconds=2.0, details={
                  "traces": 6, "target_outputs": {"programs": 3, "skipped": {"loops sampled": 1}}}),
               [_trace(s, c) for s in (0, 1) for c in a], None),
              (b, GateResult(name="trace", passed=True, seconds=3.0, details={
                  "traces": 4, "waves_reused": 2, "target_outputs": {"programs": 4, "skipped": {"loops sampled": 2}}}),
               [_trace(s, c) for s in (0, 1) for c in b], None)]
    gate, traces = merge_judgements(CONFIGS, 2, judged)
    assert gate.passed and gate.seconds == 3.0 and gate.details["traces"] == 10 and gate.details["jobs"] == 2
    assert [(t.shape_index, config_key(t.config)) for t in traces] == [(s, config_key(c)) for s in (0, 1)
                                                                         for c in CONFIGS]
    assert gate.details["target_outputs"] == {"programs": 7, "skipped": {"loops sampled": 3}}
    assert gate.details["waves_reused"] == 2


def test_the_failure_reported_is_the_first_in_one_jobs_shape_major_order():
    a, b = split_configs(CONFIGS, 2)         # a: 64, 256, 1024; b: 128, 512
    # job a stopped at its 4th (shape 1, BLOCK=64), job b at its 2nd (shape 0, BLOCK=512): b's comes first
    judged = [(a, GateResult(name="trace", passed=False, reason="a failed"), [], 3),
              (b, GateResult(name="trace", passed=False, reason="b failed"), [], 1)]
    assert merge_judgements(CONFIGS, 2, judged)[0].reason == "b failed"
    # a judge failure (no stop) counts from the job's first trace: shape 0, BLOCK=64 comes first
    judged[0] = (a, GateResult(name="trace", passed=False, reason="a judged"), [], None)
    assert merge_judgements(CONFIGS, 2, judged)[0].reason == "a judged"
    judged[1] = (b, GateResult(name="trace", passed=True), [], None)
    assert merge_judgements(CONFIGS, 2, judged)[0].reason == "a judged"
    assert stopped_at({"traces": [1, 2], "error": "boom"}) == 2 and stopped_at({"traces": [1], "error": None}) is None


@pytest.mark.skipif(not HAS_MODEL, reason="needs the model")
def test_two_trace_jobs_give_the_one_jobs_verdict(monkeypatch):
    """Softmax's seed (two configs, traced densely at once) and a four-config variant (traced
    provisionally, then lazily): the same objective, picks and traces with one trace job or two."""
    monkeypatch.setenv(pipeline.SIDE_BY_SIDE_ENV, "1")
    softmax = load_task(REPO / "experiments" / "tasks" / "softmax.yaml")
    seed = (REPO / "experiments" / "tasks" / "kernels" / "softmax_naive.py").read_text()
    four = seed.replace('"BLOCK_N": [256, 512]', '"BLOCK_N": [256, 512, 1024, 2048]')
    assert four != seed
    real = pipeline.run_sandboxed

    def run(source: str, idle: int):
        jobs = []

        def counting(module, payload, *args, **kwargs):
            if payload.get("kind") == "trace":
                jobs.append((len(payload["kernel_configs"]), payload.get("dense")))
            return real(module, payload, *args, **kwargs)
        monkeypatch.setattr(pipeline, "run_sandboxed", counting)
        monkeypatch.setattr("kernelfoundry.evaluate.trace_jobs.idle_fork_servers", lambda module: idle)
        monkeypatch.setattr("kernelfoundry.evaluate.trace_jobs.default_mode", lambda: "fork")
        monkeypatch.setattr(pipeline, "idle_fork_servers", lambda module: 0)    # no other side-by-side jobs
        result = pipeline.verify(softmax, source, ["h100"], compile=False)
        assert result.passed, result.reason
        traces = sorted((t.shape_index, config_key(t.config), t.provisional, repr(t.launches)) for t in result.traces)
        return (result.objective, result.hardware["h100"].best_params, traces), jobs

    for source, configs in ((seed, 2), (four, 4)):
        (alone, jobs_alone), (split, jobs_split) = run(source, 0), run(source, 3)
        assert alone == split
        first = configs < pipeline.LAZY_MIN_CONFIGS          # dense at once, else provisional first
        assert [n for n, dense in jobs_alone if dense == first] == [configs]
        assert [n for n, dense in jobs_split if dense == first] == [configs // 2, configs // 2]
