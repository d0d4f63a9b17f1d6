"""Prompt-variant pool: credit, sampling, evolution through the replay provider, records, plot."""

import json
import math

import pytest

from kernelfoundry.mutate.llm_client import LLMClient, ModelSpec
from kernelfoundry.mutate.metaprompt import PromptPool, PromptPoolError, child_gain, parse_sections
from kernelfoundry.mutate.prompt_plot import plot_prompt_lineage
from kernelfoundry.mutate.replay import reset_replay

EVOLVED = ('Tiles were the win.\n<section name="strategies">\n- Use 128x128 tiles with a K step of 64.\n'
           '</section>\n<section name="made_up">ignored</section>\n')


def replay_client(tmp_path, lines, **kw):
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    reset_replay(path)
    return LLMClient(models=[ModelSpec(f"replay/{path}")], backoff_s=0.001, **kw)


def pool_of(n=2, **kw):
    variants = [{"id": i, "parent_id": None, "origin": "seed", "sections": {"philosophy": f"p{i}", "strategies": f"s{i}"}}
                for i in range(n)]
    return PromptPool.from_records(variants, **kw)


def test_seed_pool_from_prompt_dir():
    pool = PromptPool.from_prompt_dir(None, capacity=16, seed=1)
    recs = pool.to_records()
    assert len(recs) >= 2 and all(r["origin"] == "seed" and r["parent_id"] is None for r in recs)
    assert {"philosophy", "strategies", "pitfalls", "analysis"} <= set(recs[0]["sections"])
    v = pool.sample()
    assert set(v) == {"id", "parent_id", "origin", "sections"} and v["sections"]


def test_user_variants_file(tmp_path):
    (tmp_path / "variants.yaml").write_text("- name: mine\n  sections: {strategies: use big tiles}\n")
    pool = PromptPool.from_prompt_dir(tmp_path)
    assert [r["sections"] for r in pool.to_records()] == [{"strategies": "use big tiles"}]
    (tmp_path / "variants.yaml").write_text("- name: broken\n")
    with pytest.raises(PromptPoolError, match="entry 0 needs 'sections'"):
        PromptPool.from_prompt_dir(tmp_path)


def test_child_gain():
    assert child_gain(1.0, 2.0, 0.5) == pytest.approx(math.log(2))
    assert child_gain(2.0, 1.0, 0.5) == 0.0          # a slower child earns nothing, not a penalty
    assert child_gain(1.0, None, 0.5) == 0.0          # failure
    assert child_gain(None, 1.3, 0.5) == 0.5          # fixed a failed parent


def test_sampling_tries_every_variant_then_follows_credit():
    pool = pool_of(3, seed=0, exploration=0.3)
    first = {pool.sample()["id"] for _ in range(3)}
    assert first == {0, 1, 2}                          # untried variants first
    for _ in range(10):
        pool.credit(0, 1.0, 1.0)                        # no improvement
        pool.credit(1, 1.0, 2.0)                        # doubles its parents
        pool.credit(2, 1.0, None)                       # failures
    picks = [pool.sample()["id"] for _ in range(30)]
    assert picks.count(1) > 20
    recs = {r["id"]: r for r in pool.to_records()}
    assert recs[1]["mean_credit"] == pytest.approx(math.log(2)) and recs[1]["n_improved"] == 10
    assert recs[2]["credited"] == 10 and recs[2]["mean_credit"] == 0.0
    assert pool.credit("999", 1.0, 2.0) == 0.0           # unknown ids are ignored


def test_due_for_evolution_every_n_credited_uses():
    pool = pool_of(2, evolve_every=3)
    for _ in range(2):
        pool.credit(0, 1.0, 1.5)
    assert pool.due_for_evolution() is None
    pool.credit("0", 1.0, 1.5)                          # ids may come back as strings from the store
    assert pool.due_for_evolution() == 0


def test_evolve_produces_a_variant(tmp_path):
    pool = pool_of(2, evolve_every=2, seed=5)
    for _ in range(2):
        pool.credit(1, 0.5, 1.0)
    vid = pool.due_for_evolution()
    assert vid == 1
    client = replay_client(tmp_path, [{"content": EVOLVED, "cost_usd": 0.003}])
    feedback = [{"id": 9, "passed": False, "gate": "correctness", "feedback": "max abs error 2.0"},
                {"id": 10, "passed": True, "objective": 1.0, "description": "bigger tiles"}]
    new = pool.evolve(vid, feedback, client, operator="improve")
    assert new is not None and new["parent_id"] == 1 and new["origin"] == "improve" and new["id"] == 2
    assert new["sections"] == {"philosophy": "p1", "strategies": "- Use 128x128 tiles with a K step of 64."}
    assert pool.due_for_evolution() is None
    (rec,) = pool.drain_llm_log()
    assert pool.drain_llm_log() == []
    assert rec["purpose"] == "prompt_mutation" and rec["cost_usd"] == pytest.approx(0.003)
    prompt = rec["messages"][1]["content"]
    for needle in ('<section name="strategies">\ns1', "Your job: improve", "max abs error 2.0",
                   "bigger tiles", "2 children scored", "parent 0.500 -> child 1.000"):
        assert needle in prompt, needle
    s = pool.summary()
    assert s == {"n_variants": 3, "n_evolved": 1, "n_retired": 0, "best_credit": pytest.approx(math.log(2))}
    assert (2, 1, 0.0, 0) in pool.lineage()


def test_evolve_rejects_duplicates_junk_and_failures(tmp_path):
    pool = pool_of(1)
    same = '<section name="strategies">s0</section>'
    client = replay_client(tmp_path, [{"content": same}, {"content": "no sections here"}, {"error": "auth"}])
    assert pool.evolve(0, [], client) is None            # duplicate of the parent
    assert pool.evolve(0, [], client) is None            # nothing parseable
    assert pool.evolve(0, [], client) is None            # LLM failure: no exception
    log = pool.drain_llm_log()
    assert [r.get("note", r.get("error_kind")) for r in log][:2] == [
        "rewritten variant duplicates an existing one; dropped",
        "reply held no <section name=...> block with a known section name"]
    assert log[2]["error_kind"] == "auth"
    assert len(pool.active()) == 1
    no_models = pool.evolve(0, [], LLMClient())
    assert no_models is None and pool.drain_llm_log()[0]["error_kind"] == "config"


def test_pool_is_bounded_and_evicts_the_worst(tmp_path):
    pool = pool_of(2, capacity=2, seed=0)
    for _ in range(3):
        pool.credit(0, 1.0, 3.0)
        pool.credit(1, 1.0, 1.0)
    client = replay_client(tmp_path, [{"content": '<section name="philosophy">new idea</section>'}])
    new = pool.evolve(0, [], client)
    assert new is not None
    active = {v["id"] for v in pool.active()}
    assert active == {0, new["id"]}                     # variant 1 (no credit) retired
    recs = {r["id"]: r for r in pool.to_records()}
    assert recs[1]["retired"] and len(recs) == 3          # retired variants stay in the records
    assert all(pool.sample()["id"] != 1 for _ in range(10))


def test_records_round_trip_and_plot(tmp_path):
    pool = pool_of(2)
    pool.sample()
    pool.credit(0, 1.0, 2.0)
    client = replay_client(tmp_path, [{"content": EVOLVED}])
    pool.evolve(0, [], client, operator="simplify")
    records = json.loads(json.dumps(pool.to_records()))     # as the run store keeps them
    restored = PromptPool.from_records(records)
    assert restored.to_records() == pool.to_records()
    assert restored.summary() == pool.summary()
    for rec in records:
        for key in ("id", "parent_id", "sections", "origin", "uses", "credited", "mean_credit", "created_at"):
            assert key in rec
    out = plot_prompt_lineage(records, tmp_path / "plots" / "prompts.png")
    assert out.is_file() and out.stat().st_size > 5000
    with pytest.raises(PromptPoolError):
        PromptPool.from_records([{"id": 1}])


def test_parse_sections_accepts_loose_tags():
    text = "<Section name='pitfalls'>\n mask edges \n</section><section name=strategies>x</section>"
    assert parse_sections(text, ["pitfalls", "strategies"]) == {"pitfalls": "mask edges", "strategies": "x"}
    assert parse_sections(text, ["analysis"]) == {}
