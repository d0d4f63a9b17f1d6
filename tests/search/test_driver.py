"""The steady-state driver with synthetic workers: budget, storage, archive, resume, worker death."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fake_worker import FakeWorker  # noqa: E402

from kernelfoundry.errors import UserError
from kernelfoundry.search.archive import ArchiveSpec, KernelArchive
from kernelfoundry.search.loop import SearchDriver, SearchSettings
from kernelfoundry.search.progress import ProgressLine
from kernelfoundry.search.workers import WorkerPool
from kernelfoundry.store import RunStore
from kernelfoundry.task import load_task

TASK = Path(__file__).parents[2] / "experiments" / "tasks" / "softmax.yaml"
SPEC = ArchiveSpec(names=("tiling", "memory_pattern"), ranges=((0.0, 24.0), (0.0, 6.0)), bins=(12, 6),
                   labels={"tiling": [str(i) for i in range(12)], "memory_pattern": [str(i) for i in range(6)]})


def make_driver(tmp_path, budget, *, workers=2, seeds_source="SEED", worker_cls=FakeWorker):
    task = load_task(TASK)
    store = RunStore(tmp_path / "run.sqlite")
    pool = WorkerPool(workers, worker_cls, {"task": task.to_dict(), "hardware": ["h100"],
                                             "mutator": {"type": "builtin"}, "verify_options": None},
                      num_cpus=0.5)
    pool.ready()
    driver = SearchDriver(task=task, settings=SearchSettings(budget=budget, workers=workers, seed=1,
                                                             hardware=["h100"]),
                          store=store, run_dir=tmp_path, pool=pool, progress=ProgressLine(budget, quiet=True),
                          archive=KernelArchive(SPEC, seed=1))
    return driver, store, pool


def test_runs_to_budget_and_stores_everything(tmp_path, ray_local):
    driver, store, pool = make_driver(tmp_path, budget=30)
    try:
        summary = driver.run([("seed.py", "SEED")])
    finally:
        pool.shutdown()
    assert summary["n_candidates"] == 30 == store.candidate_count()
    rows = list(store.iter_candidates())
    assert rows[0].mutator == "seed" and rows[0].passed
    failed = [r for r in rows if not r.passed]
    assert {r.gate for r in failed} <= {"correctness", "mutate"}
    assert summary["n_correct"] == sum(r.passed for r in rows)
    assert summary["gate_failures"] == {g: sum(r.gate == g for r in failed) for g in {r.gate for r in failed}}
    assert all(r.parent_ids for r in rows[1:])
    assert summary["num_elites"] == driver.archive.num_elites > 1
    assert summary["best_objective"] == max(r.objective for r in rows if r.passed)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["n_candidates"] == 30 and on_disk["finished"] is True
    for key in ("task", "coverage", "qd_score", "llm", "wall_seconds", "hardware", "best_candidate_id"):
        assert key in on_disk
    store.close()


def test_resume_continues_without_reevaluating(tmp_path, ray_local):
    driver, store, pool = make_driver(tmp_path, budget=12)
    try:
        driver.run([("seed.py", "SEED")])
    finally:
        pool.shutdown()
    first = [(r.id, r.source) for r in store.iter_candidates()]
    elites_before = driver.archive.num_elites
    store.close()
    driver, store, pool = make_driver(tmp_path, budget=25)
    assert driver.archive.num_elites == elites_before        # rebuilt from the store
    try:
        summary = driver.run([])
    finally:
        pool.shutdown()
    rows = [(r.id, r.source) for r in store.iter_candidates()]
    assert rows[:12] == first and len(rows) == 25 == summary["n_candidates"]
    sources = [s for _, s in rows if s is not None]          # failed mutations have no source
    assert len(set(sources)) == len(sources)                 # nothing evaluated twice
    store.close()


class DyingWorker(FakeWorker):
    def propose(self, job):
        out = super().propose(job)
        if out["source"] and job["kind"] != "seed" and job["seed"] % 5 == 0:
            out["source"] += "\n# DIE"
            out["hash"] = out["hash"][:-1] + "x"
        return out


def test_dead_worker_is_replaced_and_run_goes_on(tmp_path, ray_local):
    driver, store, pool = make_driver(tmp_path, budget=20, worker_cls=DyingWorker)
    try:
        summary = driver.run([("seed.py", "SEED")])
    finally:
        pool.shutdown()
    rows = list(store.iter_candidates())
    dead = [r for r in rows if r.gate == "worker"]
    assert dead and all("worker died" in r.reason for r in dead)
    assert summary["n_candidates"] == 20 and pool.replaced == len(dead)
    store.close()


def test_failing_seed_is_a_user_error(tmp_path, ray_local):
    driver, store, pool = make_driver(tmp_path, budget=5)
    try:
        with pytest.raises(UserError, match="no seed kernel"):
            driver.run([("bad.py", "SEED FAIL")])
    finally:
        pool.shutdown()
    assert store.candidate_count() == 1   # the failed seed is still recorded
    store.close()


def test_mutator_out_of_edits_stops_early_with_the_reason(tmp_path, ray_local, monkeypatch):
    import kernelfoundry.search.loop as loop
    monkeypatch.setattr(loop, "MAX_CONSECUTIVE_DUPLICATES", 12)
    driver, store, pool = make_driver(tmp_path, budget=50)
    try:
        summary = driver.run([("seed.py", "SEED STUCK")])
    finally:
        pool.shutdown()
    assert summary["n_candidates"] == 2 and summary["duplicates_skipped"] >= 12
    assert "run out of new edits" in summary["stop_reason"] and summary["finished"] is True
    assert json.loads((tmp_path / "summary.json").read_text())["stop_reason"] == summary["stop_reason"]
    store.close()


def test_an_interrupted_session_is_not_finished_and_a_resume_evaluates_seeds_not_stored(tmp_path, ray_local,
                                                                                         monkeypatch):
    driver, store, pool = make_driver(tmp_path, budget=10)

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(driver, "_steady_state", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            driver.run([("seed.py", "SEED")])
    finally:
        pool.shutdown()
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["finished"] is False and on_disk["n_candidates"] == 1
    store.close()
    # the resume gets every seed of the run: the stored one is not evaluated again, the other is
    driver, store, pool = make_driver(tmp_path, budget=6)
    try:
        summary = driver.run([("seed.py", "SEED"), ("seed2.py", "SEED2")])
    finally:
        pool.shutdown()
    sources = [r.source for r in store.iter_candidates()]
    assert sources[:2] == ["SEED", "SEED2"] and summary["n_candidates"] == 6 and summary["finished"] is True
    store.close()


def test_a_resume_whose_stored_seeds_all_failed_names_their_reasons(tmp_path, ray_local):
    driver, store, pool = make_driver(tmp_path, budget=5)
    try:
        with pytest.raises(UserError):
            driver.run([("bad.py", "SEED FAIL")])
    finally:
        pool.shutdown()
    store.close()
    driver, store, pool = make_driver(tmp_path, budget=5)
    try:
        with pytest.raises(UserError, match="gate 'correctness': mismatch at row 3"):
            driver.run([("bad.py", "SEED FAIL")])
    finally:
        pool.shutdown()
    assert store.candidate_count() == 1
    store.close()
