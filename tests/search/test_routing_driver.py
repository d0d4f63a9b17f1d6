"""Adaptive routing in the real driver (in-process fake LLM workers): jobs carry the router's choice,
the run store keeps each decision, summary.json has ``routing``, --max-llm-seconds stops the run."""

import hashlib
import json
import sys
from pathlib import Path

from kernelfoundry.search.archive import ArchiveSpec, KernelArchive
from kernelfoundry.search.loop import SearchDriver, SearchSettings
from kernelfoundry.search.progress import ProgressLine
from kernelfoundry.search.routing import RoutingHook
from kernelfoundry.store import RunStore
from kernelfoundry.task import load_task

sys.path.insert(0, str(Path(__file__).parents[2] / "experiments"))
from bench_engine import InlinePool  # noqa: E402

TASK = Path(__file__).parents[2] / "experiments" / "tasks" / "softmax.yaml"
SPEC = ArchiveSpec(names=("tiling", "memory_pattern"), ranges=((0.0, 24.0), (0.0, 6.0)), bins=(12, 6),
                   labels={"tiling": [str(i) for i in range(12)], "memory_pattern": [str(i) for i in range(6)]})
#: model -> (share of correct children, USD per call, seconds per call)
MODELS = {"good-cheap": (0.7, 0.0005, 3.0), "bad-dear": (0.1, 0.02, 20.0)}


class FakeLLMWorker:
    def __init__(self, index):
        self.index = index

    def propose(self, job):
        if job["kind"] == "seed":
            src, mutator, usage, log = job["source"], "seed", {}, []
        else:
            model = job["model"]
            p_ok, usd, secs = MODELS[model]
            h = int(hashlib.sha256(f"{model}{job['seed']}".encode()).hexdigest(), 16)
            src = job["parent"]["source"] + f"\n# edit {job['seed']}" + ("" if h % 1000 < p_ok * 1000 else " FAIL")
            mutator = f"llm:{model}"
            usage = {"calls": 1, "prompt_tokens": 2000, "completion_tokens": 300, "cost_usd": usd, "latency_s": secs}
            log = [{"model": model, "purpose": job["mode"], "latency_s": secs, "cost_usd": usd}]
        return {"source": src, "mutator": mutator, "description": "", "prompt_id": None, "error": None,
                "parent_ids": [] if job["kind"] == "seed" else [job["parent"]["id"]],
                "hash": hashlib.sha256(src.encode()).hexdigest()[:32], "usage": usage, "llm_log": log}

    def verify(self, source):
        h = int(hashlib.sha256(source.encode()).hexdigest(), 16)
        ok = "FAIL" not in source
        return {"passed": ok, "gate": None if ok else "correctness", "reason": "", "gates": [],
                "descriptors": {"tiling": (h % 1200) / 50.0, "memory_pattern": (h // 1200) % 6 + 0.5},
                "objective": 0.5 + (h % 1000) / 400.0 if ok else None, "hardware": {}, "seconds": 0.0}


def run(tmp_path, budget, **settings):
    store = RunStore(tmp_path / "run.sqlite")
    hook = RoutingHook([{"name": n, "weight": 1.0} for n in MODELS], prices={}, max_seconds=settings.get(
        "max_llm_seconds"))
    driver = SearchDriver(task=load_task(TASK), settings=SearchSettings(budget=budget, workers=2, seed=0,
                                                                       hardware=["h100"], **settings),
                          store=store, run_dir=tmp_path, pool=InlinePool(2, [FakeLLMWorker(i) for i in range(2)]), progress=ProgressLine(budget, quiet=True),
                          archive=KernelArchive(SPEC), routing=hook)
    return driver.run([("seed.py", "SEED")]), store


def test_adaptive_routing_in_the_driver_is_stored_and_summarised(tmp_path):
    summary, store = run(tmp_path, 120)
    r = summary["routing"]
    assert r["policy"] == "adaptive" and r["decisions"] == 119
    good, bad = r["models"]["good-cheap"], r["models"]["bad-dear"]
    assert good["calls"] > 3 * bad["calls"] and bad["calls"] >= 3          # learned, still explored
    assert good["correct"] / good["calls"] > bad["correct"] / max(1, bad["calls"])
    assert summary["llm"]["seconds"] == good["llm_seconds"] + bad["llm_seconds"]
    assert summary["llm"]["cost_usd"] == round(good["cost_usd"] + bad["cost_usd"], 6)
    records = [rec for rec in store.iter_llm_calls() if rec.get("purpose") != "prompt-evolution"]
    assert len(records) == 119 and all(rec["routing"]["model"] == rec["model"] for rec in records)
    assert all(set(rec["routing"]["scores"]) == set(MODELS) and rec["routing"]["reason"] for rec in records)
    assert json.loads((tmp_path / "summary.json").read_text())["routing"]["models"].keys() == MODELS.keys()
    store.close()


def test_max_llm_seconds_stops_the_run(tmp_path):
    summary, store = run(tmp_path, 200, max_llm_seconds=120.0)
    assert summary["n_candidates"] < 200 and "--max-llm-seconds" in summary["stop_reason"]
    assert 120.0 <= summary["llm"]["seconds"] < 120.0 + 2 * 20.0             # at most one call per worker over
    store.close()
