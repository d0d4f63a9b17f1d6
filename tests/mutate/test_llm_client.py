"""LLMClient, model specs and the replay provider, all through litellm's real completion path."""

import json
import threading
import time

import pytest

from kernelfoundry.errors import UserError
from kernelfoundry.mutate.llm_client import (CostBudget, LLMCallError, LLMClient, ModelSpec, ModelSpecError,
                                             choose_model, parse_model_specs)
from kernelfoundry.mutate.replay import export_replay, load_replay_lines, request_hash, reset_replay, ReplayError

MSG = [{"role": "system", "content": "You write kernels."}, {"role": "user", "content": "Make it faster. " * 40}]


def write_jsonl(path, lines):
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    reset_replay(path)
    return path


@pytest.fixture
def replay(tmp_path):
    def make(lines, name="r.jsonl", **spec):
        path = write_jsonl(tmp_path / name, lines)
        return ModelSpec(name=f"replay/{path}", **spec)
    return make


def client(**kw):
    kw.setdefault("backoff_s", 0.001)
    kw.setdefault("timeout_s", 5.0)
    return LLMClient(**kw)


def test_replay_answers_in_order_and_cycles_with_real_usage(replay):
    model = replay([{"content": "first reply"}, {"content": "second reply, a little longer", "cost_usd": 0.25}])
    c = client()
    texts = [c.complete(MSG, model).text for _ in range(3)]
    assert texts == ["first reply", "second reply, a little longer", "first reply"]
    reply = c.complete(MSG, model)
    rec = reply.log_record
    assert reply.usage.calls == 1 and reply.usage.cost_usd == pytest.approx(0.25)
    # token counts are real counts of the prompt and reply, not placeholders
    assert 100 < rec["prompt_tokens"] < 300 and 3 <= rec["completion_tokens"] <= 12
    for key in ("model", "messages", "response", "prompt_tokens", "completion_tokens", "cost_usd",
                "latency_s", "error", "attempt", "timestamp"):
        assert key in rec
    assert rec["error"] is None and rec["attempt"] == 1 and rec["messages"] == MSG
    assert rec["cost_note"].startswith("replay")


def test_replay_prefers_request_hash_then_match(replay):
    other = [{"role": "user", "content": "Current guidance (prompt variant 3)"}]
    model = replay([{"content": "kernel A"}, {"content": "prompt edit", "match": "Current guidance"},
                    {"content": "kernel B"}, {"content": "recorded answer", "request_hash": request_hash(MSG)}])
    c = client()
    assert c.complete(MSG, model).text == "recorded answer"     # hash hit first
    assert c.complete(other, model).text == "prompt edit"       # matched line beats unmarked ones
    assert c.complete(MSG, model).text == "kernel A"            # then unmarked lines in order
    assert c.complete(other, model).text == "prompt edit"
    assert c.complete(MSG, model).text == "kernel B"


def test_a_request_missing_its_hash_takes_the_next_unused_line(replay):
    recorded = [{"content": "A", "request_hash": request_hash(MSG)}, {"content": "B"}, {"content": "C"}]
    model = replay(recorded)
    other = [{"role": "user", "content": "a request the recording does not have"}]
    c = client()
    assert c.complete(MSG, model).text == "A"          # its own recording
    assert c.complete(other, model).text == "B"        # a miss: the next line not used yet, not A again
    assert c.complete(other, model).text == "C"


def test_replay_purpose_streams(replay):
    model = replay([{"content": "kernel 1"}, {"content": "prompt 1", "purpose": "prompt_mutation"},
                    {"content": "kernel 2"}, {"content": "fix 1", "purpose": "fix"}])
    c = client()
    got = [c.complete(MSG, model, purpose=p).text for p in ("prompt_mutation", "mutate", "fix", "mutate", "rewrite")]
    assert got == ["prompt 1", "kernel 1", "fix 1", "kernel 2", "kernel 1"]


def test_rate_limit_server_timeout_are_retried_with_backoff(replay):
    model = replay([{"error": "rate_limit"}, {"error": "server"}, {"content": "late", "delay_s": 2.0},
                    {"error": "unavailable"}, {"content": "ok"}])
    sleeps = []
    c = client(max_retries=4, timeout_s=0.05, backoff_s=1.0, sleep=sleeps.append)
    reply = c.complete(MSG, model)
    kinds = [a["error_kind"] for a in reply.attempts]
    assert kinds == ["rate_limit", "server", "timeout", "unavailable", None]
    assert reply.text == "ok" and reply.usage.calls == 5
    assert [a["attempt"] for a in reply.attempts] == [1, 2, 3, 4, 5]
    # exponential backoff with +-50% jitter
    assert len(sleeps) == 4
    for i, s in enumerate(sleeps):
        assert 0.5 * 2 ** i <= s <= 1.5 * 2 ** i


def test_empty_replies_retried_then_fail(replay):
    model = replay([{"content": ""}])
    c = client(max_retries=2)
    with pytest.raises(LLMCallError, match="after 3 attempts.*empty reply") as info:
        c.complete(MSG, model)
    assert [a["error_kind"] for a in info.value.attempts] == ["empty"] * 3
    assert info.value.usage.calls == 3 and info.value.usage.prompt_tokens > 0


def test_an_empty_reply_cut_by_max_tokens_is_not_retried(replay):
    model = replay([{"content": "", "finish_reason": "length"}])
    with pytest.raises(LLMCallError, match="not retried.*spent all max_tokens") as info:
        client(max_retries=3).complete(MSG, model)
    assert [a["error_kind"] for a in info.value.attempts] == ["truncated"]
    assert info.value.attempts[0]["finish_reason"] == "length"


@pytest.mark.parametrize("kind", ["auth", "bad_request"])
def test_auth_and_bad_request_are_not_retried(replay, kind):
    model = replay([{"error": kind}, {"content": "never reached"}])
    with pytest.raises(LLMCallError, match="not retried") as info:
        client(max_retries=4).complete(MSG, model)
    assert len(info.value.attempts) == 1 and info.value.attempts[0]["error_kind"] == kind


def test_cost_budget_stops_calls(replay):
    model = replay([{"content": "x", "cost_usd": 0.6}])
    budget = CostBudget(1.0)
    c = client(budget=budget)
    c.complete(MSG, model)
    c.complete(MSG, model)
    assert budget.exhausted() and budget.spent == pytest.approx(1.2) and budget.remaining() == 0.0
    with pytest.raises(LLMCallError, match="budget exhausted") as info:
        c.complete(MSG, model)
    assert info.value.attempts == []
    assert not CostBudget(None).exhausted()
    with pytest.raises(UserError):
        CostBudget(-1)


def test_priced_and_unpriced_models():
    import litellm
    from kernelfoundry.mutate.llm_client import _cost
    from litellm.types.utils import Usage
    resp = litellm.ModelResponse(model="gpt-4o")
    resp.usage = Usage(prompt_tokens=1000, completion_tokens=100, total_tokens=1100)
    cost, note = _cost(litellm, resp, ModelSpec("openai/gpt-4o"))
    assert note is None and 0.001 < cost < 0.1          # from litellm's bundled price map, no network
    resp.model = "kf-no-such-model-xyz"
    cost, note = _cost(litellm, resp, ModelSpec("openai/kf-no-such-model-xyz"))
    assert cost == 0.0 and "no price" in note


def test_concurrency_limit_serialises_calls(replay):
    model = replay([{"content": "slow", "delay_s": 0.15}])
    c = client(max_concurrency=1, timeout_s=5)
    c.complete(MSG, model)          # warm litellm up before timing
    start = time.monotonic()
    threads = [threading.Thread(target=c.complete, args=(MSG, model)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - start >= 0.44


def test_parse_model_specs_from_task_and_cli(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "a.jsonl", [{"content": "x"}])
    monkeypatch.chdir(tmp_path)
    specs = parse_model_specs(["openai/gpt-4o", {"name": "ollama/qwen2.5-coder", "weight": 3,
                                                 "api_base": "http://localhost:11434", "temperature": 0.2}], [])
    assert [s.name for s in specs] == ["openai/gpt-4o", "ollama/qwen2.5-coder"]
    assert specs[1].weight == 3.0 and specs[1].temperature == 0.2 and specs[1].api_base == "http://localhost:11434"
    # --model replaces the task's models; replay paths become absolute
    cli = parse_model_specs(["openai/gpt-4o"], ["replay/a.jsonl,weight=2,max_tokens=512"])
    assert cli == [ModelSpec(name=f"replay/{path.resolve()}", weight=2.0, max_tokens=512)]
    assert parse_model_specs([], []) == []


@pytest.mark.parametrize("task_models, cli, message", [
    ([{"name": "openai/gpt-4o", "wieght": 2}], [], r"models\[0\]'.*unknown key\(s\) wieght"),
    ([{"name": "openai/gpt-4o", "weight": -1}], [], r"'weight' must be a positive number"),
    ([{"name": "openai/gpt-4o", "temperature": 5}], [], r"'temperature' must be a number in \[0, 2\]"),
    ([{"name": "x", "api_base": "localhost"}], [], r"'api_base' must be a URL"),
    ([{"name": "x", "api_key_env": "KF_SURELY_UNSET_VAR"}], [], "KF_SURELY_UNSET_VAR, which is not set"),
    ([{"weight": 1}], [], r"'name' must be"),
    ("openai/gpt-4o", [], "must be a list"),
    ([], ["openai/gpt-4o,weight"], "option 'weight' must be key=value"),
    ([], ["replay/does/not/exist.jsonl"], "replay file .* does not exist"),
    ([], ["opnai/gpt-4o"], "litellm knows no provider for 'opnai/gpt-4o'"),       # checked offline, before Ray
    ([{"name": "gpt4o"}], [], "litellm knows no provider for 'gpt4o'"),
])
def test_bad_model_specs_name_the_field(task_models, cli, message):
    with pytest.raises(ModelSpecError, match=message):
        parse_model_specs(task_models, cli)


def test_bad_replay_files(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "ok"}\n{"nope": 1}\n')
    with pytest.raises(ReplayError, match="line 2: needs a string 'content'"):
        load_replay_lines(bad)
    bad.write_text('{"error": "meltdown"}\n')
    with pytest.raises(ReplayError, match="line 1: 'error' is 'meltdown'"):
        load_replay_lines(bad)
    bad.write_text("not json\n")
    with pytest.raises(ReplayError, match="line 1: not JSON"):
        load_replay_lines(bad)
    # a NaN cost would silently disable --max-cost (nan >= limit is never true)
    for line, message in (('{"content": "ok", "cost_usd": NaN}', "'cost_usd' must be a finite number >= 0"),
                          ('{"content": "ok", "cost_usd": -1}', "'cost_usd' must be a finite number >= 0"),
                          ('{"content": "ok", "delay_s": -2}', "'delay_s' must be a finite number >= 0"),
                          ('{"content": "ok", "prompt_tokens": "12"}', "'prompt_tokens' must be a whole number")):
        bad.write_text(line + "\n")
        with pytest.raises(ReplayError, match=message):
            load_replay_lines(bad)
    bad.write_bytes(b'{"content": "caf\xe9"}\n')
    with pytest.raises(ReplayError, match="is not UTF-8 text"):
        load_replay_lines(bad)


def test_choose_model_follows_weights():
    import random
    models = [ModelSpec("a", weight=1), ModelSpec("b", weight=3)]
    rng = random.Random(0)
    picks = [choose_model(models, rng).name for _ in range(2000)]
    assert 0.70 < picks.count("b") / len(picks) < 0.80


def test_export_replay_round_trip(replay, tmp_path):
    model = replay([{"error": "rate_limit"}, {"content": "answer one", "cost_usd": 0.01},
                    {"content": "answer two"}], name="orig.jsonl")
    c = client()
    other = [{"role": "user", "content": "another request"}]
    log = c.complete(MSG, model).attempts + c.complete(other, model).attempts
    n = export_replay(log, tmp_path / "rec.jsonl")
    assert n == 3
    lines = load_replay_lines(tmp_path / "rec.jsonl")
    assert lines[0]["error"] == "rate_limit" and lines[1]["content"] == "answer one"
    assert lines[1]["cost_usd"] == 0.01 and lines[1]["request_hash"] == request_hash(MSG)
    assert lines[1]["purpose"] == "mutation"
    # replaying in a different request order still answers each request with its recording
    rec_model = ModelSpec(f"replay/{tmp_path / 'rec.jsonl'}")
    reset_replay()
    second = c.complete(other, rec_model)
    first = c.complete(MSG, rec_model)
    assert second.text == "answer two"
    assert [a["error_kind"] for a in first.attempts] == ["rate_limit", None] and first.text == "answer one"
    assert first.usage.cost_usd == pytest.approx(0.01)
    assert first.log_record["prompt_tokens"] == log[1]["prompt_tokens"]


def test_a_reply_with_a_lone_surrogate_becomes_storable_text():
    from types import SimpleNamespace
    from kernelfoundry.mutate.llm_client import _reply_text
    response = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="ok \ud83d done"))])
    text = _reply_text(response)
    text.encode("utf-8")                       # would raise UnicodeEncodeError for a lone surrogate
    assert text.startswith("ok ") and text.endswith(" done")
