"""The experience store, its values, the operator bandit and the memory command (no runs)."""

import multiprocessing as mp
import random
import sqlite3

import pytest

from kernelfoundry.errors import UserError
from kernelfoundry.memory import ExperienceStore, resolve_memory_path
from kernelfoundry.memory.__main__ import main as memory_main
from kernelfoundry.memory.bandit import OperatorBandit
from kernelfoundry.memory.task_signature import TaskSignature, shape_class, similarity
from kernelfoundry.memory.store import Prior
from kernelfoundry.memory.values import DRAFT, FAILED_REFINE, REFINE, reward_of, stage_of

SOFTMAX = TaskSignature("softmax", "softmax", 1, "float32", "r3xl5", "h100")
SOFTMAX_B = TaskSignature("softmax_wide", "softmax", 1, "float32", "r2xl5", "a100,h100")
MATMUL = TaskSignature("matmul", "matmul", 1, "float16", "r3xl3", "h100")


def exp(stage, action, reward, passed=True, **kw):
    return dict(dict(stage=stage, action=action, request_kind="mutate", passed=passed, reward=reward,
                     objective=1.0 if passed else None, diff=f"-a\n+b {action} {reward}\n"), **kw)


def test_similarity_orders_related_tasks():
    assert similarity(SOFTMAX, SOFTMAX) == 1.0
    assert 0.6 < similarity(SOFTMAX, SOFTMAX_B) < 1.0
    assert similarity(SOFTMAX, MATMUL) < 0.5
    same_but_kind = TaskSignature("other", "norm", 1, "float32", "r3xl5", "h100")
    assert similarity(SOFTMAX, same_but_kind) == 0.0          # the memory transfers within an op kind only
    assert shape_class({"x": (4096, 32768)}) == "r3xl4" and shape_class({"a": (8,), "b": (3, 5, 7)}) == "r1xl0"


def test_stages_and_rewards():
    assert stage_of(None, "seed") == DRAFT and stage_of(False, "mutate") == DRAFT and stage_of(True, "fix") == DRAFT
    assert stage_of(True, "mutate") == REFINE and stage_of(True, "crossover") == REFINE
    assert reward_of(DRAFT, True, None, 0.5) == 1.0 and reward_of(DRAFT, False, None, None) == 0.0
    assert reward_of(REFINE, True, 1.0, 2.0) == pytest.approx(0.5)          # log 2 = 0.69, clipped
    assert reward_of(REFINE, True, 1.0, 1.1) == pytest.approx(0.0953, abs=1e-4)
    assert reward_of(REFINE, False, 1.0, None) == FAILED_REFINE


def test_values_pool_over_similar_signatures(tmp_path):
    with ExperienceStore(tmp_path / "m.sqlite") as store:
        for r in (0.2, 0.4):
            store.add_experience(SOFTMAX, exp(REFINE, "builtin:online_softmax", r), ["builtin:online_softmax"])
        store.add_experience(SOFTMAX, exp(REFINE, "builtin:grow_block", FAILED_REFINE, passed=False),
                             ["builtin:grow_block", "prompt:abc"])
        store.add_experience(MATMUL, exp(REFINE, "builtin:grouped_order", 0.3), ["builtin:grouped_order"])
        priors = store.priors(SOFTMAX_B, REFINE)
        assert set(priors) == {"builtin:online_softmax", "builtin:grow_block", "prompt:abc"}   # matmul is not similar
        w = similarity(SOFTMAX_B, SOFTMAX)
        assert priors["builtin:online_softmax"].mean == pytest.approx(0.3)
        assert priors["builtin:online_softmax"].n == pytest.approx(2 * w)
        assert priors["builtin:grow_block"].mean == pytest.approx(FAILED_REFINE)
        assert store.priors(SOFTMAX_B, REFINE, exclude_task="softmax") == {}
        assert store.priors(SOFTMAX, DRAFT) == {}
        top = store.top_experiences(SOFTMAX_B, REFINE, k=5)
        assert [e["action"] for e in top] == ["builtin:online_softmax", "builtin:online_softmax"]
        assert top[0]["reward"] == 0.4 and "+b builtin:online_softmax 0.4" in top[0]["diff"]


def test_elites_fit_the_launch_and_are_replaced_per_run(tmp_path):
    src2 = "def launch(x, y, *, B):\n    pass\n"
    with ExperienceStore(tmp_path / "m.sqlite") as store:
        store.record_elites("run1", SOFTMAX, [{"candidate_id": 3, "objective": 1.5, "cell": [1, 2], "n_inputs": 1,
                                               "source": "S1"}, {"candidate_id": 4, "objective": 0.9, "n_inputs": 2,
                                                                "source": src2}])
        store.record_elites("run2", MATMUL, [{"candidate_id": 1, "objective": 9.0, "n_inputs": 1, "source": "M"}])
        found = store.best_elites(SOFTMAX_B, n_inputs=1)
        assert [e["source"] for e in found] == ["S1"]                    # matmul's is not similar enough
        assert store.best_elites(SOFTMAX_B, n_inputs=1, exclude_task="softmax") == []
        store.record_elites("run1", SOFTMAX, [{"candidate_id": 5, "objective": 2.0, "n_inputs": 1, "source": "S2"}])
        assert [e["source"] for e in store.best_elites(SOFTMAX, n_inputs=1)] == ["S2"]


def _writer(path, n, who):
    with ExperienceStore(path) as store:
        for i in range(n):
            store.add_experience(SOFTMAX, exp(REFINE, "builtin:x", 0.1, description=f"{who}{i}"), ["builtin:x"])


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "m.sqlite"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, 150, w)) for w in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with ExperienceStore(path) as store:
        assert store.stats()["experiences"] == 300
        assert store.priors(SOFTMAX, REFINE)["builtin:x"].n == pytest.approx(300)


def test_a_foreign_sqlite_file_is_refused(tmp_path):
    other = tmp_path / "run.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE candidates (id INTEGER)")
    db.commit()
    db.close()
    with pytest.raises(UserError, match="not a KernelFoundry memory"):
        ExperienceStore(other)


def test_bad_files_give_clear_errors(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(UserError, match=r"bad.sqlite cannot be used.*--no-memory"):
        ExperienceStore(bad)
    newer = tmp_path / "newer.sqlite"
    ExperienceStore(newer).close()
    db = sqlite3.connect(newer)
    db.execute("UPDATE meta SET value='99' WHERE key='schema'")
    db.commit()
    db.close()
    with pytest.raises(UserError, match="schema 99, newer"):
        ExperienceStore(newer)
    with pytest.raises(UserError, match="does not exist"):
        ExperienceStore(tmp_path / "none.sqlite", create=False)


def test_memory_path_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("KERNELFOUNDRY_MEMORY", raising=False)
    assert resolve_memory_path(None, tmp_path) == tmp_path / "memory.sqlite"
    assert resolve_memory_path(tmp_path / "x.sqlite", "archives") == tmp_path / "x.sqlite"
    assert resolve_memory_path(None, tmp_path, enabled=False) is None
    monkeypatch.setenv("KERNELFOUNDRY_MEMORY", str(tmp_path / "env.sqlite"))
    assert resolve_memory_path(None, "archives") == tmp_path / "env.sqlite"
    monkeypatch.setenv("KERNELFOUNDRY_MEMORY", "off")
    assert resolve_memory_path(None, "archives") is None


OPS = {"big": ("mutate", 4.0), "small": ("mutate", 1.0), "other": ("fix", 1.0)}


def test_bandit_cold_prior_follows_weights_and_learns():
    bandit = OperatorBandit(OPS)
    rng = random.Random(0)
    firsts = [bandit.order("mutate", REFINE, rng)[0] for _ in range(400)]
    assert set(bandit.order("mutate", REFINE, rng)) == {"big", "small"}
    assert firsts.count("big") > firsts.count("small")                 # the fixed weights, as a weak prior
    for _ in range(30):
        bandit.update(REFINE, "small", 0.3)
        bandit.update(REFINE, "big", -0.1)
    firsts = [bandit.order("mutate", REFINE, rng)[0] for _ in range(200)]
    assert firsts.count("small") > 190


def test_bandit_prior_from_memory_replaces_the_weight():
    bandit = OperatorBandit(OPS, {REFINE: {"builtin:small": Prior(n=50, mean=0.25)}})
    bandit.update(REFINE, "big", 0.0)              # observed once: no longer ahead as unknown to the memory
    rng = random.Random(1)
    firsts = [bandit.order("mutate", REFINE, rng)[0] for _ in range(200)]
    assert firsts.count("small") > 180
    summary = bandit.summary()
    assert summary[f"{REFINE}:small"]["prior"] == "memory" and summary[f"{REFINE}:small"]["prior_n"] == 20.0
    assert summary[f"{REFINE}:big"]["prior"] == "weight"


def test_memory_command(tmp_path, capsys):
    path = tmp_path / "m.sqlite"
    with ExperienceStore(path) as store:
        for i in range(5):
            store.add_experience(SOFTMAX, exp(REFINE, "builtin:a", 0.1 * i), ["builtin:a"])
        store.add_experience(MATMUL, exp(DRAFT, "seed", 1.0, request_kind="seed"), ["seed"])
        store.record_elites("r", MATMUL, [{"candidate_id": 1, "objective": 2.0, "n_inputs": 2, "source": "M"}])
    assert memory_main(["--memory", str(path), "stats"]) == 0
    out = capsys.readouterr().out
    assert "6 experiences from 1 runs, 1 elites" in out and "builtin:a" in out and "softmax" in out
    assert memory_main(["--memory", str(path), "show", "--task", "softmax", "--limit", "2", "--diff"]) == 0
    out = capsys.readouterr().out
    assert out.count("softmax stage 2 builtin:a") == 2 and "+b builtin:a 0.4" in out
    assert memory_main(["--memory", str(path), "export", "--out", str(tmp_path / "x.jsonl")]) == 0
    lines = (tmp_path / "x.jsonl").read_text().splitlines()
    assert len(lines) == 7 and '"type": "elite"' in lines[-1]
    assert memory_main(["--memory", str(path), "prune"]) == 2
    assert "prune needs" in capsys.readouterr().err
    assert memory_main(["--memory", str(path), "prune", "--keep-per-task", "2"]) == 0
    assert "removed 3 experiences; 3 left" in capsys.readouterr().out
    assert memory_main(["--memory", str(path), "prune", "--task", "matmul"]) == 0
    with ExperienceStore(path) as store:
        assert store.best_elites(MATMUL, 2) == [] and store.stats()["experiences"] == 2
    assert memory_main(["--memory", str(tmp_path / "missing.sqlite"), "stats"]) == 2


def test_bandit_puts_operators_already_applied_to_the_parent_last():
    bandit = OperatorBandit(OPS)
    bandit.update(REFINE, "big", 0.5)
    rng = random.Random(3)
    assert all(bandit.order("mutate", REFINE, rng, frozenset({"big"})) == ["small", "big"] for _ in range(50))


def test_operators_the_memory_does_not_know_go_first_until_observed_once():
    # the memory of a similar task valued only what applied there ("small", a parameter tweak that
    # paid off); "big" never applied there: its silence must not rank it behind "small"
    bandit = OperatorBandit(OPS, {REFINE: {"builtin:small": Prior(n=7, mean=0.2)}})
    rng = random.Random(4)
    assert all(bandit.order("mutate", REFINE, rng) == ["big", "small"] for _ in range(50))
    assert bandit.order("mutate", REFINE, rng, frozenset({"big"})) == ["small", "big"]   # tried on the parent: last
    bandit.update(REFINE, "big", 0.0)
    firsts = [bandit.order("mutate", REFINE, rng)[0] for _ in range(200)]
    assert firsts.count("small") > 150                  # then the memory's value ranks them
    # without memory values the plain Thompson order stays (cold runs are unchanged)
    cold = OperatorBandit(OPS)
    cold.update(REFINE, "big", 0.3)
    firsts = [cold.order("mutate", REFINE, rng)[0] for _ in range(200)]
    assert firsts.count("big") > 150


def _open_at_once(path, barrier):
    barrier.wait()
    with ExperienceStore(path) as store:
        store.stats()


def test_runs_opening_a_new_memory_file_at_once_all_get_it(tmp_path):
    # the WAL switch and the schema's creation race when several runs start on a new file together
    ctx = mp.get_context("fork")
    for trial in range(10):
        path = tmp_path / f"m{trial}.sqlite"
        barrier = ctx.Barrier(6)
        procs = [ctx.Process(target=_open_at_once, args=(path, barrier)) for _ in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * 6, trial
        with ExperienceStore(path) as store:
            assert store.stats()["experiences"] == 0


def test_a_resumed_run_replays_its_stored_candidates_into_the_bandit():
    """What record() taught the operator bandit, replay() of the same stored candidates teaches a fresh one
    (a resumed run goes on with what it had learned, not from its cold prior)."""
    from kernelfoundry import REPO_DIR
    from kernelfoundry.memory import RunMemory
    from kernelfoundry.task import load_task
    task = load_task(REPO_DIR / "experiments/tasks/softmax.yaml")
    ops = {"big": ("mutate", 4.0), "small": ("mutate", 1.0), "mend": ("fix", 1.0)}
    first = RunMemory.open(None, task, ["h100"], builtin_operators=ops)
    stored = [  # (job kind, parent passed, parent objective, passed, objective, mutator)
        ("mutate", True, 1.0, True, 1.3, "builtin:big"),
        ("mutate", True, 1.3, True, 1.1, "builtin:small"),
        ("mutate", True, 1.3, False, None, "builtin:big"),
        ("fix", False, None, True, 1.2, "builtin:mend"),
        ("mutate", True, 1.2, True, 1.2, "llm:some-model"),
    ]
    for kind, parent_passed, parent_objective, passed, objective, mutator in stored:
        first.record({"kind": kind, "parent": {"passed": parent_passed, "objective": parent_objective}},
                     {"passed": passed, "objective": objective, "mutator": mutator})
    resumed = RunMemory.open(None, task, ["h100"], builtin_operators=ops)
    assert resumed.bandit.summary() != first.bandit.summary()
    for row in stored:
        resumed.replay(*row)
    assert resumed.bandit.summary() == first.bandit.summary()
    assert first.bandit.summary()[f"{REFINE}:big"]["n"] == 2
