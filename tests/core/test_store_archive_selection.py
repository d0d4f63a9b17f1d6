"""Run store round trips, archive cells and statuses, and parent selection strategies."""

import math
from pathlib import Path
from collections import Counter

from kernelfoundry.search.archive import IMPROVED, NEW_CELL, NOT_ADDED, ArchiveSpec, KernelArchive
from kernelfoundry.search.selection import SelectionState, Selector
from kernelfoundry.store import RunStore

SPEC = ArchiveSpec(names=("tiling", "memory_pattern"), ranges=((0.0, 24.0), (0.0, 6.0)), bins=(12, 6),
                   labels={"tiling": [f"t{i}" for i in range(12)], "memory_pattern": [f"m{i}" for i in range(6)]})


def row(cid, **kw):
    base = dict(id=cid, parent_ids=[], mutator="seed", kind="seed", description="", source=f"src{cid}",
                passed=True, gate=None, reason="", gates=[], hardware={"h100": {"latency_s": 1.0}},
                descriptors={"tiling": 3.0, "memory_pattern": 1.5}, objective=1.0, archive_status=2,
                llm_calls=1, prompt_tokens=10, completion_tokens=5, cost_usd=0.01, seconds=0.1, verify_seconds=0.1)
    base.update(kw)
    return base


def test_store_round_trip_and_llm_calls(tmp_path):
    store = RunStore(tmp_path / "run.sqlite")
    cid = store.add_candidate(row(0), llm_log=[{"model": "m", "prompt_tokens": 10, "response": "x"}])
    store.add_candidate(row(1, passed=False, gate="correctness", reason="bad", objective=None, descriptors=None))
    store.set_meta("task", {"name": "t"})
    store.close()
    store = RunStore(tmp_path / "run.sqlite", create=False)
    got = store.get_candidate(cid)
    assert got.passed and got.hardware == {"h100": {"latency_s": 1.0}} and got.descriptors["tiling"] == 3.0
    assert [r.id for r in store.iter_candidates(passed_only=True)] == [0]
    assert store.candidate_count() == 2 and store.next_candidate_id() == 2
    calls = list(store.iter_llm_calls())
    assert calls[0]["candidate_id"] == 0 and calls[0]["response"] == "x"
    assert store.get_meta("task") == {"name": "t"}
    store.save_prompts([{"id": "p0", "sections": {"a": "b"}}])
    store.save_prompts([{"id": "p0", "sections": {"a": "c"}}])
    assert store.load_prompts() == [{"id": "p0", "sections": {"a": "c"}}]


def test_archive_statuses_cells_and_clipping():
    a = KernelArchive(SPEC)
    assert a.add(0, "s0", 1.0, {"tiling": 4.5, "memory_pattern": 1.5}) == NEW_CELL
    assert a.add(1, "s1", 0.5, {"tiling": 5.0, "memory_pattern": 1.2}) == NOT_ADDED
    assert a.add(2, "s2", 2.0, {"tiling": 5.9, "memory_pattern": 1.9}) == IMPROVED
    assert a.add(3, "s3", 1.0, {"tiling": 99.0, "memory_pattern": -3}) == NEW_CELL   # clipped to edge bins
    assert a.add(4, "s4", float("nan"), {"tiling": 1, "memory_pattern": 1}) == NOT_ADDED
    assert a.cell_of({"tiling": 99.0, "memory_pattern": -3}) == (11, 0)
    assert a.num_elites == 2 and math.isclose(a.qd_score, 3.0) and math.isclose(a.coverage, 2 / 72)
    assert a.elite_in((2, 1)).candidate_id == 2 and a.best.candidate_id == 2
    assert (2, 2) in a.empty_neighbours((2, 1)) and (2, 1) not in a.empty_neighbours((1, 1))
    assert SPEC.describe_cell((2, 1)) == "tiling=t2, memory_pattern=m1"


def filled_archive():
    a = KernelArchive(SPEC)
    for i in range(6):
        a.add(i, f"s{i}", 1.0 + i, {"tiling": 2.0 * i + 0.5, "memory_pattern": 1.5})
    return a


def test_map_elites_selection_mixes_exploit_explore_and_crossover():
    a = filled_archive()
    state = SelectionState(seed_ids=[0])
    sel = Selector("map-elites", seed=3)
    choices = [sel.choose(a, state) for _ in range(400)]
    reasons = Counter(c.reason for c in choices)
    assert reasons["exploit"] > reasons["explore"] > reasons["random"] > 0 and reasons["best"] > reasons["random"]
    assert all(c.parent_id == 5 for c in choices if c.reason == "best")   # no best_id noted: the top elite
    parents = Counter(c.parent_id for c in choices)
    assert parents[5] == max(parents.values())                  # best elite picked most
    assert len(parents) == 6                                     # but every cell gets visits
    xs = [c for c in choices if c.kind == "crossover"]
    assert 0.05 < len(xs) / len(choices) < 0.3
    for c in choices:
        assert c.parent_id not in c.inspiration_ids
        if c.target_cell:
            assert a.elite_in(tuple(c.target_cell["cell"])) is None
    again, b = Selector("map-elites", seed=3), filled_archive()
    assert [again.choose(b, SelectionState(seed_ids=[0])).parent_id for _ in range(20)] == \
        [c.parent_id for c in choices[:20]]


def test_greedy_and_random_strategies():
    a = filled_archive()
    state = SelectionState(seed_ids=[0, 1])
    for cid, obj in ((0, 1.0), (1, 3.0), (2, 2.0)):
        state.note(cid, True, obj, None)
    assert {Selector("greedy").choose(a, state).parent_id for _ in range(10)} == {1}
    rnd = Selector("random", seed=1)
    assert {rnd.choose(a, state).parent_id for _ in range(50)} == {0, 1}
    state.note(9, False, None, "correctness")
    fixes = [Selector("map-elites", seed=0, p_fix=1.0).choose(a, state)]
    assert fixes[0].kind == "fix" and fixes[0].parent_id == 9


def test_an_exhausted_elite_hands_its_turn_to_a_stepping_stone():
    """Edits of an elite that keep coming back as duplicates: a correct non-elite candidate is mutated instead."""
    from kernelfoundry.search.selection import EXHAUSTED_AFTER
    a = KernelArchive(SPEC)
    a.add(0, "s0", 2.0, {"tiling": 0.5, "memory_pattern": 1.5})
    state = SelectionState(seed_ids=[0])
    for cid, obj in ((0, 2.0), (7, 1.9), (8, 0.5)):          # 7 and 8 lost the cell to 0
        state.note(cid, True, obj, None)
    state.note(9, False, None, "correctness")
    sel = Selector("map-elites", seed=2)
    assert {sel.choose(a, state).parent_id for _ in range(30)} == {0}
    for _ in range(EXHAUSTED_AFTER):
        state.note_duplicate(0)
    picks = [sel.choose(a, state) for _ in range(200)]
    assert {c.parent_id for c in picks} == {7, 8}                # never the failed one
    assert Counter(c.parent_id for c in picks)[7] > 150          # by objective
    assert all(c.reason.startswith("stepping stone") for c in picks)
    for _ in range(EXHAUSTED_AFTER):
        state.note_duplicate(7)
        state.note_duplicate(8)
    assert {sel.choose(a, state).parent_id for _ in range(30)} == {0}   # all used up: the elite again


def test_a_stored_task_keeps_its_inputs_in_launch_order(tmp_path):
    from kernelfoundry.task import load_task, task_from_dict
    task = load_task(Path(__file__).resolve().parents[2] / "experiments" / "tasks" / "layernorm.yaml")          # x, weight, bias: not alphabetical
    store = RunStore(tmp_path / "run.sqlite")
    store.set_meta("task", task.to_dict())
    store.close()
    store = RunStore(tmp_path / "run.sqlite", create=False)
    back = task_from_dict(store.get_meta("task"), check_files=False)
    assert [s.name for s in back.inputs] == [s.name for s in task.inputs] == ["x", "weight", "bias"]

