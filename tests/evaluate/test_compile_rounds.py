"""The compile gate's rounds: the model's best compiled first, then what overtakes it, within a budget
of compile jobs per verify; configs whose launches are all compiled already get their figures for
free; the pick reported has always compiled.  The compiler and the model are stand-ins here (the
real ones: tests/evaluate/test_compile_gate.py), so each scenario is exact and fast."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import kernelfoundry.perfmodel as perfmodel
from kernelfoundry.candidate import config_key
from kernelfoundry.compiler.report import CompileReport, ConfigCompile, HardwareCompile, KernelCompile
from kernelfoundry.compiler.resources import CompiledResources
from kernelfoundry.evaluate.judge import compile_gate as gate

SPACE = {"A": [16, 32, 64], "B": [1, 2], "num_warps": [4]}
CONFIGS = [{"A": a, "B": b, "num_warps": 4} for a in SPACE["A"] for b in SPACE["B"]]


def _launches(config):
    """Two kernels: the first's launch depends on A, the second's on B."""
    return [f"k1@A={config['A']}", f"k2@B={config['B']}"]


class FakeToolchain:
    """A compile cache of launches and a model whose estimates the compiled figures multiply by *penalty*."""

    def __init__(self, estimate, penalty=1.0, fails=(), ranked=16):
        self.estimate = {config_key(c): v for c, v in zip(CONFIGS, estimate)}
        self.ranked = ranked                      # how many configs the model's ranking holds
        self.penalty, self.fails = penalty, set(fails)
        self.cache: set[str] = set()
        self.jobs: list[list[str]] = []           # config keys compiled per real job

    def compile_configs(self, source, wanted, sigs, cache, already, *, cached_only=False, known=None):
        keys = [config_key(c) for c in wanted.get("h100", []) if ("h100", config_key(c)) not in already]
        if not keys:
            return None
        by_key = {config_key(c): c for c in CONFIGS}
        if cached_only:
            keys = [k for k in keys if all(launch in self.cache and (known is None or launch in known)
                                           for launch in _launches(by_key[k]))]
        else:
            self.jobs.append(keys)
            for k in keys:
                self.cache.update(_launches(by_key[k]))
        hw = HardwareCompile(hardware="h100", target="cuda:90:32", status="ok")
        for k in keys:
            ok = k not in self.fails
            kernels = [KernelCompile(kernel=launch, signature={}, key=launch, ok=ok,
                                     error="" if ok else "out of resources",
                                     resources=CompiledResources(vendor="nvidia", registers=64, num_warps=4,
                                                                 threads_per_program=128, shared_bytes=0)
                                     if ok else None)
                       for launch in _launches(by_key[k])]
            hw.configs[k] = ConfigCompile(ok=ok, error="" if ok else "k1: out of resources", kernels=kernels)
        return CompileReport(source_hash="x", triton_version="t", hardware={"h100": hw},
                             cache_hits=0, cache_misses=0 if cached_only else 2 * len(keys))

    def score(self, task, traces, space, hardware, *, seed=0, exclude=None, compiled=None):
        banned = (exclude or {}).get("h100", set())
        known = (compiled or {}).get("h100", {})
        latency = {k: v * (self.penalty if k in known else 1.0) for k, v in self.estimate.items() if k not in banned}
        order = sorted(latency, key=latency.get)
        by_key = {config_key(c): c for c in CONFIGS}
        best = by_key[order[0]] if order else {}
        hw = SimpleNamespace(best_params=dict(best), latency_s=latency.get(order[0]) if order else None,
                             compiled="", estimated_latency_s=None)
        return SimpleNamespace(ranked={"h100": [dict(by_key[k]) for k in order[:self.ranked]]}, hardware={"h100": hw})


@pytest.fixture
def toolchain(monkeypatch):
    def make(estimate, **kw):
        fake = FakeToolchain(estimate, **kw)
        monkeypatch.setattr(gate, "compile_configs", fake.compile_configs)
        monkeypatch.setattr(gate, "launch_signatures", lambda traces: {})
        monkeypatch.setattr(perfmodel, "score_candidate", fake.score)
        return fake
    return make


def _run(fake, budget=None):
    first = fake.score(None, [], SPACE, ["h100"])
    return gate.compile_gate("src", None, [], SPACE, ["h100"], first, seed=0, budget=budget)


def test_when_the_compiled_figures_match_the_estimates_one_config_is_compiled(toolchain):
    fake = toolchain([5.0, 4.0, 3.0, 1.0, 2.0, 6.0])
    result, score, details = _run(fake)
    assert result.passed and fake.jobs == [["A=32,B=2,num_warps=4"]]
    assert config_key(score.hardware["h100"].best_params) == "A=32,B=2,num_warps=4"
    assert details["dropped_uncompiled"] == {} and "not compiled" not in result.reason


def test_a_pick_that_compiles_worse_than_estimated_is_chased_within_the_budget_and_the_report_is_compiled(
        toolchain):
    fake = toolchain([5.0, 4.0, 3.0, 1.0, 2.0, 6.0], penalty=10.0)
    result, score, details = _run(fake)
    assert len(fake.jobs) == gate.MAX_ROUNDS and all(len(job) == gate.DEFAULT_TOP_K for job in fake.jobs)
    best = config_key(score.hardware["h100"].best_params)
    compiled_ok = {k for k, c in details["hardware"]["h100"]["configs"].items() if c["ok"]}
    assert best in compiled_ok                                      # never an estimate alone
    assert details["dropped_uncompiled"]["h100"] >= 1
    assert "ranked ahead on the model's estimates alone were not compiled" in result.reason


def test_configs_whose_launches_are_all_compiled_get_their_figures_without_a_job(toolchain):
    fake = toolchain([5.0, 4.0, 3.0, 1.0, 2.0, 6.0], penalty=10.0)
    result, score, details = _run(fake)
    compiled_by_jobs = {k for job in fake.jobs for k in job}
    known = set(details["hardware"]["h100"]["configs"])
    # (A=32,B=2) then (A=64,B=1) compiled: (A=32,B=1) and (A=64,B=2) share all their launches
    assert compiled_by_jobs == {"A=32,B=2,num_warps=4", "A=64,B=1,num_warps=4"}
    assert {"A=32,B=1,num_warps=4", "A=64,B=2,num_warps=4"} <= known - compiled_by_jobs


def test_the_budget_is_shared_by_one_verifys_calls(toolchain):
    fake = toolchain([5.0, 4.0, 3.0, 1.0, 2.0, 6.0], penalty=10.0)
    budget = gate.new_budget()
    _run(fake, budget)
    jobs = len(fake.jobs)
    result, score, details = _run(fake, budget)                     # the pipeline's next round
    assert budget["rounds"] == 0 and len(fake.jobs) == jobs
    best = config_key(score.hardware["h100"].best_params)
    assert details["hardware"]["h100"]["configs"][best]["ok"]      # from the cache, free


def test_when_the_pick_does_not_compile_the_next_round_adds_the_default(toolchain):
    fake = toolchain([5.0, 4.0, 3.0, 1.0, 2.0, 6.0], fails={"A=32,B=2,num_warps=4"})
    result, score, details = _run(fake)
    assert fake.jobs[0] == ["A=32,B=2,num_warps=4"]
    assert "A=16,B=1,num_warps=4" in fake.jobs[1]                   # the default, as the safety net
    assert result.passed and config_key(score.hardware["h100"].best_params) != "A=32,B=2,num_warps=4"


def test_what_else_the_cache_holds_does_not_change_the_outcome(toolchain):
    cold = toolchain([5.0, 4.0, 3.0, 1.0, 2.0, 6.0], penalty=10.0)
    _, cold_score, cold_details = _run(cold)
    warm = toolchain([5.0, 4.0, 3.0, 1.0, 2.0, 6.0], penalty=10.0)
    warm.cache.update(launch for config in CONFIGS for launch in _launches(config))   # another verify's compiles
    _, warm_score, warm_details = _run(warm)
    assert warm_score.hardware["h100"].best_params == cold_score.hardware["h100"].best_params
    assert warm.jobs == cold.jobs
    assert set(warm_details["hardware"]["h100"]["configs"]) == set(cold_details["hardware"]["h100"]["configs"])


def test_a_later_call_falls_back_on_the_verifys_compiled_configs_however_far_down_they_rank(toolchain):
    fake = toolchain([5.0, 4.0, 3.0, 1.0, 2.0, 6.0], penalty=10.0, ranked=2)
    budget = gate.new_budget()
    _run(fake, budget)
    assert budget["rounds"] == 0 and budget["compiled"]["h100"]
    # the pipeline's next round (denser traces): the A=16 configs, never compiled, now rank first
    fake.estimate.update({"A=16,B=1,num_warps=4": 0.5, "A=16,B=2,num_warps=4": 0.6})
    result, score, details = _run(fake, budget)
    best = config_key(score.hardware["h100"].best_params)
    assert best in budget["compiled"]["h100"] and details["hardware"]["h100"]["configs"][best]["ok"]
    assert details["dropped_uncompiled"]["h100"] >= 2 and "not compiled" in result.reason
