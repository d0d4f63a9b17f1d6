"""The router alone: convergence with exploration, priors, budgets, length and latency learning, speed."""

import random
import time

import pytest

from kernelfoundry.errors import UserError
from kernelfoundry.memory.store import Prior
from kernelfoundry.memory.values import DRAFT, REFINE
from kernelfoundry.mutate.routing import Router, RoutingError, routing_value
from kernelfoundry.search.routing import RoutingHook, resolve_policy

PRICES = {"cheap": (1e-7, 1e-6), "dear": (3e-6, 15e-6)}


def drive(router, n, rng, p_ok, *, mode="mutate", seconds=None, tokens=None, **budget):
    picks = []
    for i in range(n):
        d = router.choose(mode, 1200, rng, slots_left=n - i, **budget)
        picks.append(d.model)
        ok = rng.random() < p_ok[d.model]
        router.observe(d.model, mode, passed=ok, parent_objective=1.0, child_objective=1.1 if ok else None,
                       parent_chars=1200, prompt_tokens=2000, completion_tokens=(tokens or {}).get(d.model, 300),
                       seconds=(seconds or {}).get(d.model, 5.0),
                       cost_usd=2000 * PRICES[d.model][0] + 300 * PRICES[d.model][1])
    return picks


def test_converges_to_the_better_model_per_dollar_and_still_explores_the_other():
    router = Router({"cheap": 1.0, "dear": 1.0}, prices=PRICES)
    # cheap is as often correct as dear, at a fiftieth of the price and a fifth of the time
    picks = drive(router, 400, random.Random(3), {"cheap": 0.5, "dear": 0.5}, seconds={"cheap": 3.0, "dear": 15.0})
    late = picks[200:]
    assert late.count("cheap") / len(late) > 0.85
    assert picks.count("dear") >= 0.05 * len(picks) - 1           # never starved
    assert "dear" in late
    s = router.summary()["models"]
    assert s["cheap"]["calls"] + s["dear"]["calls"] == 400 and s["cheap"]["cost_usd"] < s["dear"]["cost_usd"]


def test_a_much_better_expensive_model_is_worth_its_price():
    router = Router({"cheap": 1.0, "dear": 1.0}, prices=PRICES)
    picks = drive(router, 300, random.Random(5), {"cheap": 0.02, "dear": 0.9})
    assert picks[150:].count("dear") / 150 > 0.7


def test_task_weights_are_priors():
    router = Router({"a": 8.0, "b": 1.0}, prices={"a": (1e-6, 1e-6), "b": (1e-6, 1e-6)})
    rng = random.Random(0)
    first = [router.choose("mutate", 1000, rng).model for _ in range(15)]      # no outcome seen yet
    assert first.count("a") > first.count("b")
    assert router.correct[("a", "mutate")].prior_mean > router.correct[("b", "mutate")].prior_mean


def test_memory_priors_override_weights():
    priors = {DRAFT: {"llm:b": Prior(n=50, mean=0.9)}, REFINE: {"llm:b": Prior(n=50, mean=0.1, n_positive=30)}}
    router = Router({"a": 1.0, "b": 1.0}, prices={"a": (1e-6, 1e-6), "b": (1e-6, 1e-6)}, priors=priors)
    assert router.summary()["models"]["b"]["prior"] == "memory"
    rng = random.Random(1)
    picks = [router.choose("fix", 1000, rng).model for _ in range(20)]
    assert picks.count("b") > 14


def test_budgets_are_respected():
    router = Router({"cheap": 1.0, "dear": 1.0}, prices=PRICES, max_cost=1.0, max_seconds=1000.0)
    rng = random.Random(2)
    # half a cent left: the dear model's call (about $0.009 predicted) does not fit
    picks = {router.choose("mutate", 1200, rng, spent_usd=0.995, slots_left=5).model for _ in range(30)}
    assert picks == {"cheap"}
    d = router.choose("mutate", 1200, rng, spent_usd=1.0, slots_left=5)
    assert d.model == "cheap" and d.reason.startswith("budget")
    router.observe("dear", "mutate", passed=True, parent_objective=1.0, child_objective=1.2, parent_chars=1200,
                   prompt_tokens=2000, completion_tokens=1000, seconds=40.0, cost_usd=0.02)
    router.observe("cheap", "mutate", passed=False, parent_objective=1.0, child_objective=None, parent_chars=1200,
                   prompt_tokens=2000, completion_tokens=300, seconds=3.0, cost_usd=0.0005)
    # 10 LLM seconds left: only the fast model fits
    picks = {router.choose("mutate", 1200, rng, spent_seconds=990.0, slots_left=3).model for _ in range(30)}
    assert picks == {"cheap"}


def test_length_and_latency_are_learned_per_model_and_kind():
    router = Router({"a": 1.0, "b": 1.0}, prices=PRICES | {"a": (0, 0), "b": (0, 0)})
    before = router.predict("a", "rewrite", 4000)
    assert before[0] > router.predict("a", "mutate", 4000)[0]          # a rewrite is longer than an edit
    for _ in range(30):
        router.observe("a", "rewrite", passed=True, parent_objective=1.0, child_objective=1.0, parent_chars=4000,
                       prompt_tokens=3000, completion_tokens=2000, seconds=2.0 + 2000 / 50, cost_usd=0.0)
    tokens, _, seconds = router.predict("a", "rewrite", 4000)
    assert 1700 < tokens < 2100 and 30 < seconds < 45
    assert router.predict("b", "rewrite", 4000)[0] == pytest.approx(before[0])


def test_fixed_policy_draws_by_weight_and_bad_options_name_the_flag():
    router = Router({"a": 3.0, "b": 1.0}, policy="fixed")
    rng = random.Random(0)
    picks = [router.choose("mutate", 100, rng).model for _ in range(2000)]
    assert 0.7 < picks.count("a") / 2000 < 0.8
    assert resolve_policy(None, 2) == "adaptive" and resolve_policy(None, 1) == "fixed"
    with pytest.raises(UserError, match="--routing"):
        resolve_policy("smart", 2)
    with pytest.raises(RoutingError, match="--routing"):
        Router({"a": 1.0}, policy="greedy")


def test_values_and_decision_records():
    assert routing_value("fix", True, None, 1.0) == 1.0 and routing_value("fix", False, None, None) == 0.0
    assert routing_value("mutate", False, 1.0, None) == 0.0
    assert routing_value("mutate", True, 1.0, 1.0) == pytest.approx(0.1)
    assert routing_value("mutate", True, 1.0, 0.5) == 0.0                  # slower than the parent
    hook = RoutingHook([{"name": "cheap", "weight": 1}, {"name": "dear", "weight": 1}], prices=PRICES)
    job = {"kind": "mutate", "seed": 7, "parent": {"id": 1, "source": "x" * 800, "passed": True, "objective": 1.0},
           "inspirations": []}
    hook.route(job, spent_usd=0.0, spent_seconds=0.0, slots_left=10)
    d = job["routing"]
    assert job["model"] == d["model"] in PRICES and job["mode"] in ("mutate", "rewrite")
    assert set(d["scores"]) == set(PRICES) and d["reason"] and isinstance(d["explore"], bool)
    log = [{"model": job["model"], "purpose": job["mode"]}]
    hook.observe(job, {"mutator": f"llm:{job['model']}", "llm_log": log,
                       "usage": {"prompt_tokens": 100, "completion_tokens": 50, "cost_usd": 0.001, "latency_s": 3.0}},
                 {"passed": True, "objective": 1.2})
    assert log[-1]["routing"]["model"] == job["model"] and log[-1]["routing"]["value"] > 0.1
    s = hook.summary()
    assert s["models"][job["model"]]["correct"] == 1 and s["models"][job["model"]]["llm_seconds"] == 3.0
    assert s["models"][job["model"]]["kinds"][job["mode"]]["calls"] == 1 and s["driver_ms_per_request"] >= 0


def test_routing_costs_well_under_half_a_millisecond_per_request():
    router = Router({"a": 1.0, "b": 2.0, "c": 1.0}, prices={"a": (1e-6, 1e-5), "b": (1e-7, 1e-6), "c": (0, 0)},
                    max_cost=10.0)
    rng = random.Random(0)
    t0 = time.perf_counter()
    for i in range(2000):
        d = router.choose("mutate", 1500, rng, spent_usd=0.001 * i, slots_left=5000 - i)
        router.observe(d.model, "mutate", passed=i % 3 == 0, parent_objective=1.0, child_objective=1.05,
                       parent_chars=1500, prompt_tokens=2000, completion_tokens=300, seconds=4.0, cost_usd=0.001)
    assert (time.perf_counter() - t0) / 2000 < 0.5e-3


def test_jobs_in_flight_count_against_the_budget():
    hook = RoutingHook([{"name": "cheap", "weight": 1}, {"name": "dear", "weight": 50}], prices=PRICES,
                       max_cost=0.02)
    dear_usd = hook.router.predict("dear", "mutate", 800)[1]
    jobs = []
    for seed in range(12):                  # twelve jobs routed before any of them returns
        job = {"kind": "mutate", "seed": seed, "inspirations": [],
               "parent": {"id": 1, "source": "x" * 800, "passed": True, "objective": 1.0}}
        hook.route(job, spent_usd=0.0, spent_seconds=0.0, slots_left=12 - seed)
        jobs.append(job)
    assert sum(j["model"] == "dear" for j in jobs) <= int(0.02 / dear_usd)
    hook.observe(jobs[0], {"mutator": f"llm:{jobs[0]['model']}", "llm_log": [], "usage": {}}, {"passed": False})
    assert len(hook.committed) == 11
