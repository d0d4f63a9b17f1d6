"""The sim provider through litellm's real completion path: real edits, broken edits, prices, virtual time."""

import time
from pathlib import Path

import pytest

from kernelfoundry.mutate.base import MutationRequest, ParentView
from kernelfoundry.mutate.edits import apply_reply
from kernelfoundry.mutate.llm import LLMMutator
from kernelfoundry.mutate.llm_client import LLMClient, ModelSpecError, parse_model_specs
from kernelfoundry.mutate.sim import diff_blocks, reset_sim
from kernelfoundry.mutate.sim_profiles import SimProfileError, load_profile, profile_from_mapping
from kernelfoundry.task import load_task

REPO = Path(__file__).parents[2]
TASK = load_task(REPO / "experiments" / "tasks" / "softmax.yaml")
SOURCE = (REPO / "experiments" / "tasks" / "kernels" / "softmax_naive.py").read_text()


def request(kind="mutate", seed=0, passed=True):
    parent = ParentView(id=3, source=SOURCE, objective=1.0, passed=passed, gate=None if passed else "correctness",
                        feedback="" if passed else "max abs error 0.4 at shape {M=7, N=129}")
    return MutationRequest(task=TASK, parent=parent, kind=kind, seed=seed,
                           inspirations=[ParentView(id=4, source=SOURCE, objective=1.0)] if kind == "crossover" else [])


def test_a_perfect_sim_model_returns_edits_that_apply_to_the_parent():
    reset_sim()
    mutator = LLMMutator(parse_model_specs([], ["sim/perfect"]))
    kinds = set()
    for seed in range(8):
        for kind in ("mutate", "fix", "crossover"):
            req = request(kind, seed, passed=kind != "fix")
            p = mutator.propose(req)
            assert p.source is not None and p.source != SOURCE, p.error
            rec = p.llm_log[-1]
            kinds.add(rec["edit"]["kind"])
            assert apply_reply(SOURCE, rec["response"], prefer="diff" if rec["purpose"] in ("mutate", "fix")
                               else "rewrite").source == p.source
            assert p.mutator == "llm:sim/perfect" and rec["error"] is None
    assert kinds == {"diff", "rewrite"}           # SEARCH/REPLACE for edits, whole modules for rewrites


def test_prices_come_from_litellm_and_latency_is_virtual():
    client = LLMClient()
    mutator = LLMMutator(parse_model_specs([], ["sim/strong"]))
    messages = mutator.renderer.mutation_messages(request(), "mutate")
    strong = load_profile("strong")
    t0 = time.monotonic()
    reply = client.complete(messages, parse_model_specs([], ["sim/strong"])[0], purpose="mutate")
    assert time.monotonic() - t0 < 10                          # 20-odd seconds are reported, not slept
    rec = reply.log_record
    assert rec["cost_note"] is None                            # priced by litellm.completion_cost
    assert rec["cost_usd"] == pytest.approx(strong.cost(rec["prompt_tokens"], rec["completion_tokens"]))
    assert rec["completion_tokens"] >= strong.reasoning_tokens
    assert rec["latency_s"] == pytest.approx(strong.latency(rec["completion_tokens"]))
    assert rec["latency_s"] > 15 and rec["latency_note"].startswith("virtual")
    assert reply.usage.latency_s == rec["latency_s"]


def test_broken_edits_are_realistic_failures():
    reset_sim()
    mutator = LLMMutator(parse_model_specs([], ["sim/broken"]))
    failures = {"apply": 0, "parse": 0, "wrong": 0}
    for seed in range(24):
        p = mutator.propose(request("mutate", seed))
        if p.source is None:
            failures["parse" if "parse" in p.error else "apply"] += 1
        else:
            assert "1.5 *" in p.source                           # parses, stores wrong values
            failures["wrong"] += 1
    assert all(n > 0 for n in failures.values()), failures


def test_quality_sets_the_useful_edit_rate():
    reset_sim()
    rates = {}
    for name in ("fast", "strong"):
        mutator = LLMMutator(parse_model_specs([], [f"sim/{name}"]))
        sims = [mutator.propose(request("mutate", seed)).llm_log[-1]["sim"] for seed in range(40)]
        assert all(s == "edit" or s.startswith("broken:") for s in sims)
        rates[name] = sims.count("edit") / len(sims)
    assert 0.08 < rates["fast"] < 0.45 and 0.4 < rates["strong"] < 0.8


def test_diff_blocks_round_trip():
    child = SOURCE.replace("num_warps", "num_warps", 1).replace('"BLOCK', '"BLOCK', 1) + "\n# tail\n"
    child = child.replace("\n\n", "\n\n# note\n", 1)
    assert apply_reply(SOURCE, diff_blocks(SOURCE, child)).source.strip() == child.strip()


def test_bad_profiles_and_names_are_refused_with_the_field(tmp_path):
    with pytest.raises(ModelSpecError, match="unknown sim profile 'genius'"):
        parse_model_specs([], ["sim/genius"])
    with pytest.raises(SimProfileError, match="field 'quality'"):
        profile_from_mapping("x", {"quality": 1.5, "first_token_s": 1, "tokens_per_s": 10,
                                   "input_usd_per_mtok": 0, "output_usd_per_mtok": 0}, "profile x")
    with pytest.raises(SimProfileError, match="unknown field.*speed"):
        profile_from_mapping("x", {"speed": 1}, "profile x")
    with pytest.raises(SimProfileError, match="missing field.*tokens_per_s"):
        profile_from_mapping("x", {"quality": 0.5, "first_token_s": 1, "input_usd_per_mtok": 0,
                                   "output_usd_per_mtok": 0}, "profile x")
    path = tmp_path / "mine.yaml"
    path.write_text("quality: {rewrite: 0.9, default: 0.1}\nfirst_token_s: 0\ntokens_per_s: 100\n"
                    "input_usd_per_mtok: 1\noutput_usd_per_mtok: 2\n")
    spec = parse_model_specs([], [f"sim/{path}"])[0]
    assert spec.name == f"sim/{path}" and load_profile(str(path)).quality_for("rewrite") == 0.9
    (tmp_path / "bad.yaml").write_text("quality: 0.5\nfirst_token_s: -1\n")
    with pytest.raises(ModelSpecError, match="bad.yaml.*missing field"):
        parse_model_specs([], [f"sim/{tmp_path / 'bad.yaml'}"])
