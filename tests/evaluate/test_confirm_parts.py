"""The confirm gate's runs in two check jobs side by side: shared out by input bytes, judged per job,
and merged into exactly what one job over the whole plan gives (the earliest failing run in plan order)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernelfoundry.evaluate import pipeline
from kernelfoundry.evaluate.judge.confirm import judged_in_parts, split_plan
from kernelfoundry.records import GateResult
from kernelfoundry.task import load_task

REPO = Path(__file__).resolve().parents[2]
RELU = load_task(REPO / "experiments" / "tasks" / "relu.yaml")
TRANSPOSE = load_task(REPO / "experiments" / "tasks" / "transpose.yaml")
HAS_MODEL = importlib.util.find_spec("kernelfoundry.perfmodel.score") is not None


def _plan(sizes: list[int]) -> list[dict]:
    return [{"shape": {"M": 1, "N": n}, "call": i} for i, n in enumerate(sizes)]


def test_a_plan_is_shared_out_by_input_bytes_and_each_part_keeps_the_plans_order():
    plan = _plan([100, 5000, 200, 4000, 300])
    parts = split_plan(RELU, plan, 2)
    assert len(parts) == 2 and sorted(r["call"] for p in parts for r in p) == list(range(5))
    for part in parts:
        assert [r["call"] for r in part] == sorted(r["call"] for r in part)
    loads = [sum(r["shape"]["N"] for r in p) for p in parts]
    assert max(loads) - min(loads) <= 5000          # the two big runs land in different jobs: 5000 vs 4600
    assert {tuple(r["call"] for r in p) for p in parts} == {(1,), (0, 2, 3, 4)}   # greedy, heaviest first
    assert split_plan(RELU, plan, 1) == [plan]
    assert split_plan(RELU, plan[:1], 2) == [plan[:1]]           # no empty job


def _failed(why: str) -> GateResult:
    return GateResult(name="confirm", passed=False, reason=why)


def test_the_earliest_failing_run_in_plan_order_is_reported_whichever_job_ran_it():
    plan = _plan([10, 20, 30, 40])
    parts = [[plan[0], plan[3]], [plan[1], plan[2]]]
    # job 1 fails at its second run (plan run 3), job 2 at its second (plan run 2): run 2 comes first
    outcome = {0: (1, _failed("run 3")), 1: (1, _failed("run 2"))}
    got = judged_in_parts(plan, parts, lambda part: outcome[parts.index(part)])
    assert got.reason == "run 2"
    # a job that failed outright counts from its first run (plan run 1) and comes before run 3
    outcome = {0: (1, _failed("run 3")), 1: (0, _failed("job 2 killed"))}
    assert judged_in_parts(plan, parts, lambda part: outcome[parts.index(part)]).reason == "job 2 killed"


def test_passing_parts_give_every_record_in_plan_order():
    plan = _plan([10, 20, 30])
    parts = [[plan[0], plan[2]], [plan[1]]]
    got = judged_in_parts(plan, parts, lambda part: (len(part), [(r, f"record {r['call']}") for r in part]))
    assert got == [(r, f"record {r['call']}") for r in plan]
    one = judged_in_parts(plan, [plan], lambda part: (len(part), [(r, r["call"]) for r in part]))
    assert one == [(r, r["call"]) for r in plan]


@pytest.mark.skipif(not HAS_MODEL, reason="the confirm gate needs the model's picks")
def test_two_confirm_jobs_side_by_side_give_the_one_jobs_verdict(monkeypatch):
    """Same objective, picks and confirm runs whether the confirm gate runs one job or two; with two idle
    fork servers it does run two check jobs for its plan."""
    monkeypatch.setenv(pipeline.SIDE_BY_SIDE_ENV, "1")

    def confirm_jobs(idle: int) -> tuple:
        jobs = []
        real = pipeline.run_sandboxed

        def counting(module, payload, *args, **kwargs):
            if payload.get("kind") == "check":
                jobs.append(len(payload["runs"]))
            return real(module, payload, *args, **kwargs)
        monkeypatch.setattr(pipeline, "run_sandboxed", counting)
        monkeypatch.setattr(pipeline, "idle_fork_servers", lambda module: idle)
        monkeypatch.setattr(pipeline, "default_mode", lambda: "fork")
        result = pipeline.verify(TRANSPOSE, TRANSPOSE.seed_sources()[0][1], ["h100"], compile=False)
        assert result.passed, result.reason
        confirm = next(g for g in result.gates if g.name == "confirm")
        return result.objective, confirm.details["picked"], confirm.details["check_runs"], \
            confirm.details["span_runs"], jobs[1:]

    one = confirm_jobs(0)
    two = confirm_jobs(2)
    assert one[:4] == two[:4]
    runs = one[2] + one[3]
    assert runs >= 2 and one[4] == [runs]
    assert len(two[4]) == 2 and sum(two[4]) == runs
