"""The memory in runs: experiences stored per candidate, elites at the end, the operator
order and retrieved edits passed to mutators, and a second run seeded from the first."""

import json
import sys
from pathlib import Path

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.evolve import main
from kernelfoundry.memory import ExperienceStore, RunMemory
from kernelfoundry.memory.task_signature import signature_of
from kernelfoundry.memory.values import REFINE
from kernelfoundry.mutate.base import MutationRequest, ParentView
from kernelfoundry.mutate.builtin import OPERATORS, BuiltinMutator
from kernelfoundry.mutate.metaprompt import PromptPool
from kernelfoundry.mutate.prompts import PromptRenderer
from kernelfoundry.task import load_task

sys.path.insert(0, str(Path(__file__).parents[1] / "search"))
from test_driver import make_driver  # noqa: E402

RELU = REPO_DIR / "experiments/tasks/relu.yaml"
SOFTMAX = REPO_DIR / "experiments/tasks/softmax.yaml"
BUILTIN = {op.name: (op.kind, float(op.weight)) for op in OPERATORS}


def test_driver_writes_one_experience_per_candidate_and_the_elites(tmp_path, ray_local):
    driver, store, pool = make_driver(tmp_path, budget=20)
    task = driver.task
    memory = RunMemory(ExperienceStore(tmp_path / "m.sqlite"), signature_of(task, ["h100"]), str(tmp_path),
                       builtin_operators=BUILTIN, log=lambda m: None)
    driver.memory = memory
    try:
        summary = driver.run([("seed.py", "SEED")])
    finally:
        pool.shutdown()
    rows = list(store.iter_candidates())
    exps = list(memory.store.iter_experiences())
    assert len(exps) == len(rows) == 20 == summary["memory"]["experiences_written"]
    by_id = {e["candidate_id"]: e for e in exps}
    for r in rows:
        e = by_id[r.id]
        assert e["passed"] == int(r.passed) and e["action"] == ("seed" if r.mutator == "seed" else r.mutator)
        if r.mutator != "seed" and r.passed:
            assert e["stage"] == REFINE and "+# edit" in e["diff"] and e["gain"] is not None
    elites = list(memory.store.iter_elites())
    assert len(elites) == min(8, driver.archive.num_elites)
    assert max(e["objective"] for e in elites) == summary["best_objective"]
    assert "operators" in summary["memory"] and summary["memory"]["signature"]["op_kind"] == "softmax"
    memory.close()
    store.close()


def test_builtin_mutator_follows_the_operator_order():
    task = load_task(RELU)
    parent = ParentView(id=0, source=task.seed_sources()[0][1])
    mutator = BuiltinMutator(seed=0)
    for first in ("add_warps", "rows_per_program", "grow_block"):
        proposal = mutator.propose(MutationRequest(task=task, parent=parent, seed=5, operator_order=[first]))
        assert proposal.mutator == f"builtin:{first}", proposal.error


def test_llm_prompts_carry_remembered_edits():
    task = load_task(SOFTMAX)
    parent = ParentView(id=0, source=task.seed_sources()[0][1], objective=0.4)
    exp = {"task": "cross_entropy", "gain": 0.4, "description": "online softmax: one pass fewer",
           "diff": "-    m = tl.max(x)\n+    m_new = tl.maximum(m, tl.max(x))\n"}
    renderer = PromptRenderer()
    for mode in ("mutate", "fix"):
        text = renderer.mutation_messages(MutationRequest(task=task, parent=parent, kind=mode, experiences=[exp]),
                                          mode)[1]["content"]
        assert "Edits that paid off on similar tasks" in text and "On task cross_entropy: 1.49x faster" in text
        assert "+    m_new = tl.maximum(m, tl.max(x))" in text
    plain = renderer.mutation_messages(MutationRequest(task=task, parent=parent), "mutate")[1]["content"]
    assert "Edits that paid off" not in plain


def test_prompt_credit_starts_from_the_memory(tmp_path):
    task = load_task(SOFTMAX)
    pool = PromptPool.from_prompt_dir(None)
    memory = RunMemory(ExperienceStore(tmp_path / "m.sqlite"), signature_of(task, ["h100"]), "r0",
                       log=lambda m: None)
    from kernelfoundry.memory.run_memory import prompt_key
    first = next(iter(pool.variants.values()))
    key = prompt_key(first["sections"])
    for r in (0.2, 0.3):
        memory.store.add_experience(memory.sig, {"stage": REFINE, "action": "llm:x", "passed": True, "reward": r},
                                    ["llm:x", key])
    fresh = RunMemory(memory.store, memory.sig, "r1", log=lambda m: None)
    assert fresh.prime_prompts(pool) == 1
    assert first["credited"] == 2 and first["credit_sum"] == pytest.approx(0.5)
    memory.close()


def test_a_second_run_starts_from_the_first_runs_elites(tmp_path, capsys):
    mem = tmp_path / "memory.sqlite"
    args = ["--budget", "4", "--workers", "2", "--memory", str(mem), "--quiet"]
    assert main([str(RELU), "--out", str(tmp_path / "a"), *args]) == 0
    first = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert first["memory"]["cold_start_seeds"] == [] and first["memory"]["experiences_written"] == 4
    assert main([str(RELU), "--out", str(tmp_path / "b"), *args]) == 0
    second = json.loads((tmp_path / "b" / "summary.json").read_text())
    seeds = second["memory"]["cold_start_seeds"]
    assert seeds and seeds[0].startswith(f"memory:relu#{first['best_candidate_id']} ")
    assert second["best_objective"] >= first["best_objective"]          # the elite was re-verified and kept
    assert main([str(RELU), "--out", str(tmp_path / "c"), "--budget", "2", "--no-memory", "--quiet"]) == 0
    off = json.loads((tmp_path / "c" / "summary.json").read_text())["memory"]
    assert off["path"] is None and off["experiences_written"] == 0 and off["cold_start_seeds"] == []
    assert sum(arm["n"] for arm in off["operators"].values()) >= 1      # the bandit still learns in the run
    with ExperienceStore(mem) as store:
        assert store.stats()["experiences"] == 8
    assert main([str(RELU), "--out", str(tmp_path / "d"), "--no-memory", "--memory", str(mem)]) == 2
    assert "contradict" in capsys.readouterr().err


def test_llm_jobs_get_similar_tasks_experiences_by_stage(tmp_path):
    task = load_task(SOFTMAX)
    sig = signature_of(task, ["h100"])
    store = ExperienceStore(tmp_path / "m.sqlite")
    other = type(sig)(**dict(sig.to_dict(), task="softmax_other"))
    store.add_experience(other, {"stage": REFINE, "action": "llm:m", "passed": True, "reward": 0.3, "gain": 0.3,
                                 "diff": "-BLOCK 64\n+BLOCK 1024\n", "description": "bigger blocks"}, ["llm:m"])
    store.add_experience(other, {"stage": 1, "action": "llm:m", "passed": True, "reward": 1.0,
                                 "diff": "-mask = None\n+mask = offs < n\n", "description": "mask the tail"},
                         ["llm:m"])
    memory = RunMemory(store, sig, "r", log=lambda m: None)          # no built-in operators: an LLM run
    refine = memory.job_extras({"kind": "mutate", "seed": 1, "parent": {"passed": True, "objective": 1.0}})
    fix = memory.job_extras({"kind": "fix", "seed": 2, "parent": {"passed": False}})
    assert "operator_order" not in refine
    assert [e["description"] for e in refine["experiences"]] == ["bigger blocks"]
    assert [e["description"] for e in fix["experiences"]] == ["mask the tail"]
    assert "+mask = offs < n" in fix["experiences"][0]["diff"] and fix["experiences"][0]["task"] == "softmax_other"
    memory.close()


def test_record_updates_the_bandit_values_and_prompt_credit_on_their_scales(tmp_path):
    task = load_task(SOFTMAX)
    store = ExperienceStore(tmp_path / "m.sqlite")
    memory = RunMemory(store, signature_of(task, ["h100"]), "run", builtin_operators=BUILTIN, log=lambda m: None)
    parent = {"id": 0, "source": "a\n", "passed": True, "objective": 1.0, "cell": [1, 1]}
    prompt = {"id": 0, "sections": {"philosophy": "be fast"}}
    memory.record({"kind": "mutate", "seed": 1, "parent": parent, "prompt": prompt},
                  {"id": 1, "passed": True, "objective": 1.2, "mutator": "builtin:grow_block", "source": "b\n"})
    memory.record({"kind": "mutate", "seed": 2, "parent": parent, "prompt": prompt},
                  {"id": 2, "passed": False, "gate": "correctness", "mutator": "builtin:grow_block", "source": "c\n"})
    memory.note_duplicate({"kind": "mutate", "parent": parent}, "builtin:whole_row")
    arms = memory.bandit.summary()
    assert arms[f"{REFINE}:grow_block"]["n"] == 2 and arms[f"{REFINE}:grow_block"]["paid_off"] == 1
    assert arms[f"{REFINE}:whole_row"]["n"] == 1 and arms[f"{REFINE}:whole_row"]["mean"] < 0
    memory.flush()
    priors = store.priors(memory.sig, REFINE)
    import math
    assert priors["builtin:grow_block"].mean == pytest.approx((math.log(1.2) - 0.1) / 2)
    from kernelfoundry.memory.run_memory import prompt_key
    # the prompt pool credits max(0, log gain) and 0 for a failure: the memory keeps that scale
    assert priors[prompt_key(prompt["sections"])].mean == pytest.approx(math.log(1.2) / 2)
    memory.close()


def test_cold_start_takes_the_tasks_own_elites_first_and_one_per_other_task(tmp_path):
    task = load_task(RELU)
    sig = signature_of(task, list(task.hardware))
    store = ExperienceStore(tmp_path / "m.sqlite")

    def elites(name, run, objectives):
        other = type(sig)(**dict(sig.to_dict(), task=name))
        store.record_elites(run, other, [{"candidate_id": i, "objective": o, "n_inputs": 1,
                                          "source": f"def launch(x):\n    pass  # {name} {run} {i}\n"}
                                         for i, o in enumerate(objectives)])
    elites("relu", "r0", [1.0])
    elites("twin_a", "a0", [5.0, 4.0])
    elites("twin_b", "b0", [3.0])
    elites("twin_c", "c0", [9.0])
    memory = RunMemory(store, sig, "new", log=lambda m: None)
    names = [n.split(" ")[0] for n, _ in memory.cold_start_seeds(task, set())]
    assert names[0] == "memory:relu#0" and len(names) == 3
    assert len({n.split("#")[0] for n in names[1:]}) == 2 and "memory:relu#0" not in names[1:]
    from kernelfoundry.memory.run_memory import is_memory_seed
    assert is_memory_seed({"kind": "seed", "name": names[1]}) and is_memory_seed(f"seed {names[1]}")
    assert not is_memory_seed({"kind": "seed", "name": "relu_naive.py"}) and not is_memory_seed("seed relu_naive.py")
    memory.close()


def test_a_resumed_driver_replays_the_stored_candidates_into_its_bandit(tmp_path, ray_local):
    """A driver built on a stored run hands every stored child to the memory's replay, with its parent's
    outcome, in the order they were stored (RunMemory.replay: the bandit learns them again)."""
    from kernelfoundry.search.archive import KernelArchive
    from kernelfoundry.search.loop import SearchDriver, SearchSettings
    from kernelfoundry.search.progress import ProgressLine
    from test_driver import SPEC

    class Replays:
        def __init__(self):
            self.calls = []

        def replay(self, *args):
            self.calls.append(args)

    driver, store, pool = make_driver(tmp_path, budget=12)
    try:
        driver.run([("seed.py", "SEED")])
        rows = list(store.iter_candidates())
        spy = Replays()
        SearchDriver(task=driver.task, settings=SearchSettings(budget=20, workers=2, seed=1, hardware=["h100"]),
                     store=store, run_dir=tmp_path, pool=pool, progress=ProgressLine(20, quiet=True),
                     archive=KernelArchive(SPEC, seed=1), memory=spy)
    finally:
        pool.shutdown()
        store.close()
    by_id = {r.id: r for r in rows}
    children = [r for r in rows if r.parent_ids]
    assert len(children) == len(rows) - 1 and len(spy.calls) == len(children)
    for row, call in zip(children, spy.calls):
        parent = by_id[row.parent_ids[0]]
        assert call == (row.kind, bool(parent.passed), parent.objective, bool(row.passed), row.objective, row.mutator)
