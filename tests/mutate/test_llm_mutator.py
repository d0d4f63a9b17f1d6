"""LLMMutator end to end through litellm (replay provider): prompts, edits, failures, accounting."""

import json
import pickle
from pathlib import Path

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.errors import UserError
from kernelfoundry.mutate.base import MutationRequest, ParentView
from kernelfoundry.mutate.llm import LLMMutator, ModelSpec
from kernelfoundry.mutate.prompts import PromptRenderer
from kernelfoundry.mutate.replay import reset_replay
from kernelfoundry.task import load_task

DATA = Path(__file__).parent / "data"
TASK = load_task(REPO_DIR / "experiments/tasks/matmul.yaml")
SEED = TASK.seeds[0].read_text()
HW = {"h100": {"latency_s": 1.2e-3, "sol_fraction": 0.115, "baseline_s": 2.0e-4,
               "best_params": {"BLOCK_M": 32, "BLOCK_N": 32},
               "per_shape": [{"shape": {"M": 4096, "N": 4096, "K": 4096}, "bound": "dram",
                              "breakdown": {"dram_s": 1.1e-3, "compute_s": 2e-4}}]}}
SECTIONS = {"philosophy": "Chase the roofline.", "strategies": "- prefer large tiles"}


def replay_model(tmp_path, lines, name="r.jsonl", **kw):
    path = tmp_path / name
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    reset_replay(path)
    return ModelSpec(name=f"replay/{path}", **kw)


def request(kind="mutate", seed=1, passed=True, **kw):
    parent = ParentView(id=7, source=SEED, objective=0.17 if passed else None, passed=passed,
                        gate=None if passed else "correctness", hardware=HW if passed else {},
                        feedback="passed all gates" if passed else "max abs error 3.1 at shape M=33, N=65, K=17")
    inspirations = [ParentView(id=11, source=SEED.replace("[16, 32]", "[32, 64]"), objective=0.31, hardware=HW)]
    return MutationRequest(task=TASK, parent=parent, kind=kind, inspirations=inspirations, seed=seed,
                           target_cell={"cell": [3, 2], "description": "tiling=large tiles, memory=tiled reuse"},
                           prompt={"id": 4, "sections": SECTIONS}, **kw)


def mutator(models, **kw):
    kw.setdefault("backoff_s", 0.001)
    kw.setdefault("rewrite_prob", 0.0)
    return LLMMutator(models, **kw)


def test_recorded_diff_improves_matmul_seed(tmp_path):
    reset_replay()
    model = ModelSpec(name=f"replay/{DATA / 'matmul_bigger_tiles.jsonl'}")
    prop = mutator([model]).propose(request())
    assert prop.error is None, prop.error
    assert '"BLOCK_M": [64, 128]' in prop.source and '"num_stages": [3, 4]' in prop.source
    assert prop.mutator == f"llm:{model.name}" and prop.prompt_id == 4 and prop.parent_ids == (7,)
    assert prop.description.startswith("[mutate] The naive kernel")
    assert prop.usage.calls == 1 and prop.usage.cost_usd == pytest.approx(0.0125)
    assert prop.usage.prompt_tokens > 500 and prop.usage.completion_tokens > 50
    (rec,) = prop.llm_log
    assert rec["purpose"] == "mutate" and rec["edit"] == {"kind": "diff", "matches": ["exact"]}
    assert rec["messages"][0]["role"] == "system" and "Chase the roofline." in rec["messages"][0]["content"]


def test_full_rewrite(tmp_path):
    new = SEED.replace('"BLOCK_K": [16]', '"BLOCK_K": [16, 32]')
    model = replay_model(tmp_path, [{"content": f"A rewrite.\n```python\n{new}```"}])
    prop = mutator([model]).propose(request(kind="rewrite"))
    assert prop.error is None and prop.source.strip() == new.strip()
    assert prop.llm_log[0]["purpose"] == "rewrite" and prop.llm_log[0]["edit"]["kind"] == "rewrite"
    assert "complete new\nmodule" in prop.llm_log[0]["messages"][1]["content"]


@pytest.mark.parametrize("content, reason", [
    ("I think bigger tiles would help.", "no SEARCH/REPLACE block"),
    ("<<<<<<< SEARCH\n    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n=======\n    acc = (", "not closed"),
    ("<<<<<<< SEARCH\n    this_line_is_not_there()\n=======\n    x = 1\n>>>>>>> REPLACE", "not found in the parent"),
    ("<<<<<<< SEARCH\n    return c\n=======\n    return (c\n>>>>>>> REPLACE", "does not parse"),
])
def test_malformed_output_is_an_error_not_a_crash(tmp_path, content, reason):
    model = replay_model(tmp_path, [{"content": content}])
    prop = mutator([model]).propose(request())
    assert prop.source is None and "edit did not apply (mutate)" in prop.error and reason in prop.error
    assert prop.usage.calls == 1 and len(prop.llm_log) == 1 and prop.llm_log[0]["edit_error"]


def test_empty_replies_and_timeouts_exhaust_retries(tmp_path):
    model = replay_model(tmp_path, [{"content": ""}, {"content": "late", "delay_s": 1.0}])
    prop = mutator([model], max_retries=2, timeout_s=0.05).propose(request())
    assert prop.source is None and "failed after 3 attempts" in prop.error
    assert [r["error_kind"] for r in prop.llm_log] == ["empty", "timeout", "empty"]
    assert prop.usage.calls == 3


def test_rate_limit_then_success(tmp_path):
    diff = json.loads((DATA / "matmul_bigger_tiles.jsonl").read_text().splitlines()[0])
    model = replay_model(tmp_path, [{"error": "rate_limit"}, diff])
    prop = mutator([model]).propose(request())
    assert prop.error is None and [r["attempt"] for r in prop.llm_log] == [1, 2]
    assert prop.llm_log[0]["error_kind"] == "rate_limit" and prop.usage.calls == 2


def test_auth_error_fails_once(tmp_path):
    model = replay_model(tmp_path, [{"error": "auth"}])
    prop = mutator([model]).propose(request())
    assert prop.source is None and "not retried" in prop.error and len(prop.llm_log) == 1


def test_fix_prompt_for_failed_parent(tmp_path):
    model = replay_model(tmp_path, [{"content": "<<<<<<< SEARCH\n    return c\n=======\n    return c  # fixed\n"
                                                ">>>>>>> REPLACE"}])
    prop = mutator([model]).propose(request(kind="mutate", passed=False))
    assert prop.error is None and prop.llm_log[0]["purpose"] == "fix"
    user = prop.llm_log[0]["messages"][1]["content"]
    assert "FAILED at the correctness gate" in user and "max abs error 3.1" in user
    assert "failed verification" in user


def test_crossover_uses_two_parents(tmp_path):
    new = SEED.replace('"num_warps": [4]', '"num_warps": [4, 8]')
    model = replay_model(tmp_path, [{"content": f"```python\n{new}```"}])
    prop = mutator([model]).propose(request(kind="crossover"))
    assert prop.error is None and prop.parent_ids == (7, 11)
    user = prop.llm_log[0]["messages"][1]["content"]
    assert "## Second kernel (candidate 11)" in user and "[32, 64]" in user


def test_mutation_prompt_carries_everything():
    msgs = PromptRenderer().mutation_messages(request(), "mutate")
    system, user = msgs[0]["content"], msgs[1]["content"]
    for needle in ("PARAMS", "@triton.jit", "def launch(a, b, *", "only `torch`, `triton`",
                   "must not compute", "Chase the roofline.", "- prefer large tiles",
                   "M=64, N=48, K=80", "atol=0.02"):
        assert needle in system, needle
    for needle in ("def reference(a, b)", "a [M, K] float16", "M=4096, N=4096, K=4096", "- h100", "- ascend910b2",
                   "pid_m = pid // num_pid_n", "Objective: 0.170x", "12% of speed-of-light", "bound by dram",
                   "best params BLOCK_M=32, BLOCK_N=32", "time by limit dram_s 1.1 ms, compute_s 200 us", "passed all gates", "Candidate 11: 0.310x",
                   "tiling=large tiles, memory=tiled reuse", "<<<<<<< SEARCH"):
        assert needle in user, needle
    h100 = next(line for line in user.splitlines() if line.startswith("- h100"))
    assert "TFLOPS" in h100 and "TB/s" in h100          # figures from the hardware library
    # the parent comes verbatim, inspirations shortened (blank-line runs squeezed)
    assert user.count("@triton.jit") == 2 and user.count("\n\n\n@triton.jit") == 1


def test_ensemble_choice_is_weighted_and_deterministic(tmp_path):
    a = replay_model(tmp_path, [{"content": "x"}], name="a.jsonl", weight=1)
    b = replay_model(tmp_path, [{"content": "x"}], name="b.jsonl", weight=4)
    m = mutator([a, b], seed=3, rewrite_prob=0.3)
    picks = [m.choose(request(seed=s)) for s in range(400)]
    assert picks == [m.choose(request(seed=s)) for s in range(400)]
    share_b = sum(p[0] is b for p in picks) / len(picks)
    share_rewrite = sum(p[1] == "rewrite" for p in picks) / len(picks)
    assert 0.72 < share_b < 0.88 and 0.2 < share_rewrite < 0.4


def test_user_prompt_dir_overrides_templates(tmp_path):
    (tmp_path / "mutate.j2").write_text("Custom prompt for {{ task.name }}; parent {{ parent.id }}.\n")
    msgs = PromptRenderer(tmp_path).mutation_messages(request(), "mutate")
    assert msgs[1]["content"] == "Custom prompt for matmul; parent 7.\n"
    assert "Candidate format" in msgs[0]["content"]         # system.j2 still from the project
    (tmp_path / "fix.j2").write_text("{% if %}\n")
    with pytest.raises(UserError, match="fix.j2 line 1"):
        PromptRenderer(tmp_path)
    with pytest.raises(UserError, match="is not a directory"):
        LLMMutator([ModelSpec("x")], prompt_dir=tmp_path / "missing")


def test_broken_user_template_variable_is_a_proposal_error(tmp_path):
    (tmp_path / "mutate.j2").write_text("{{ no_such_variable }}\n")
    model = replay_model(tmp_path, [{"content": "x"}])
    prop = mutator([model], prompt_dir=tmp_path).propose(request())
    assert prop.source is None and "prompt template for mutate failed" in prop.error and prop.llm_log == []


def test_mutator_pickles_for_ray(tmp_path):
    model = replay_model(tmp_path, [{"content": "x"}])
    m = mutator([model])
    m.client          # build the client (holds locks) before pickling
    clone = pickle.loads(pickle.dumps(m))
    assert clone.models == [model] and clone._client is None and clone.renderer is not None
