"""Routing benchmark: the adaptive router against fixed ensembles of simulated LLMs.

    python experiments/bench_routing.py [--smoke] [--budget N] [--seeds 0,1,2] [--out DIR]

On the smoke suite (experiments/suites/smoke.yaml), every (task, arm, seed) is one evolve run
with the same candidate budget, the real verifier and performance model, and sim LLMs
(kernelfoundry/mutate/sim_profiles.yaml, virtual latency: nothing sleeps):

    fixed-50/50   sim/strong + sim/fast, fixed equal weights (--routing fixed)
    strong        sim/strong only
    fast          sim/fast only
    router        sim/strong + sim/fast, adaptive routing (the default for an ensemble), with
                  --max-cost = 0.4 x what `strong` spent on the same task and seed (--router-cost-share)

Prompt evolution and the experience memory are off, so arms differ only in who answers.
Per arm (over seeds): best objective (geometric mean over tasks), QD-score (sum over tasks),
LLM cost and LLM time (sums over tasks; sim latencies are virtual), objective per dollar,
and the driver's routing overhead per request; then the router's per-request cost measured
alone.  Runs of one bench share a verdict cache; a finished run is read back, not redone.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelfoundry.bench import load_suite  # noqa: E402
from kernelfoundry.evolve import EvolveConfig  # noqa: E402
from kernelfoundry.search import SUMMARY_NAME  # noqa: E402
from kernelfoundry.task import load_task  # noqa: E402

SUITE = REPO / "experiments" / "suites" / "smoke.yaml"
STRONG, FAST = "sim/strong", "sim/fast"
#: arm -> (models, --routing)
ARMS = {"fixed-50/50": ([STRONG, FAST], "fixed"), "strong": ([STRONG], None), "fast": ([FAST], None),
        "router": ([STRONG, FAST], "adaptive")}


def run_arm(task_path: Path, arm: str, seed: int, budget: int, out: Path, workers: int, configs: int,
            max_cost: float | None = None) -> dict:
    """One run's summary (read back if it finished before)."""
    from kernelfoundry.search import run_evolution
    task = load_task(task_path)
    run_dir = out / task.name / arm.replace("/", "-") / f"seed{seed}"
    done = run_dir / SUMMARY_NAME
    if done.exists():
        summary = json.loads(done.read_text())
        if summary.get("finished"):
            return summary
        import shutil
        shutil.rmtree(run_dir)
    models, routing = ARMS[arm]
    cfg = EvolveConfig(task=task_path, budget=budget, workers=workers, seed=seed, out=run_dir, models=list(models),
                       routing=routing, prompt_evolution=False, quiet=True, memory_mode="off",
                       max_kernel_configs=configs, max_cost=max_cost,
                       verdict_cache=out / "verdicts.sqlite")
    summary, _ = run_evolution(cfg)
    return summary


def router_overhead(n: int = 20000) -> float:
    """Milliseconds per request of Router.choose + observe alone (two models, learning as it goes)."""
    from kernelfoundry.mutate import Router
    router = Router({STRONG: 1.0, FAST: 1.0}, prices={STRONG: (3e-6, 15e-6), FAST: (1.5e-7, 6e-7)})
    rng = random.Random(0)
    t0 = time.perf_counter()
    for i in range(n):
        mode = ("mutate", "rewrite", "fix", "crossover")[i % 4]
        d = router.choose(mode, 1500, rng, spent_usd=0.0, spent_seconds=0.0, slots_left=100)
        ok = rng.random() < (0.6 if d.model == STRONG else 0.25)
        router.observe(d.model, mode, passed=ok, parent_objective=1.0, child_objective=1.05 if ok else None,
                       parent_chars=1500, prompt_tokens=2000, completion_tokens=300, seconds=5.0, cost_usd=0.001)
    return (time.perf_counter() - t0) / n * 1e3


def _geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else 0.0


def _ms(xs: list[float]) -> str:
    if not xs:
        return "-"
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):.3f}±{sd:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="one task, budget 4, one seed (for tests)")
    parser.add_argument("--budget", type=int, default=30, help="candidates per run (seeds included)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--router-cost-share", type=float, default=0.4, metavar="F",
                        help="the router arm's --max-cost: F times what the strong-only arm spent on the same task "
                             "and seed (0: no cap, the router prices money against the ensemble's own prices)")
    parser.add_argument("--arms", default=",".join(ARMS),
                        help="arms to run (the table needs all four: runs finished in --out are read back)")
    parser.add_argument("--max-kernel-configs", type=int, default=2,
                        help="kernel configs traced per candidate, the same in every arm (evolve's default is 8)")
    parser.add_argument("--out", type=Path, help="bench directory (default: archives/bench/routing-<UTC time>)")
    args = parser.parse_args(argv)
    tasks = load_suite(SUITE).tasks
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    budget = args.budget
    if args.smoke:
        tasks, seeds, budget = tasks[:1], seeds[:1], 4
    out = args.out or REPO / "archives" / "bench" / f"routing-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    out.mkdir(parents=True, exist_ok=True)
    from kernelfoundry.search import start_ray
    start_ray(workers=args.workers)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    bad = [a for a in arms if a not in ARMS]
    if bad or not arms:
        parser.error(f"--arms: unknown arm(s) {', '.join(bad)}; known: {', '.join(ARMS)}")
    results: dict[str, list[dict]] = {arm: [] for arm in arms}      # per arm: one entry per seed
    t_start = time.time()
    for seed in seeds:
        for arm in arms:
            per_task = []
            for task_path in tasks:
                cap = None
                if arm == "router" and args.router_cost_share > 0:
                    strong = run_arm(task_path, "strong", seed, budget, out, args.workers, args.max_kernel_configs)
                    cap = args.router_cost_share * strong["llm"]["cost_usd"]
                s = run_arm(task_path, arm, seed, budget, out, args.workers, args.max_kernel_configs, cap)
                per_task.append(s)
                print(f"  seed {seed} {arm:<12} {s['task']:<18} best {s.get('best_objective') or 0:.3f} "
                      f"QD {s['qd_score']:.2f} ${s['llm']['cost_usd']:.4f} {s['llm'].get('seconds', 0):.0f} s "
                      f"({time.time() - t_start:.0f} s)", flush=True)
            results[arm].append({
                "best": _geomean([s.get("best_objective") or 0.0 for s in per_task]),
                "qd": sum(s["qd_score"] for s in per_task),
                "cost": sum(s["llm"]["cost_usd"] for s in per_task),
                "seconds": sum(s["llm"].get("seconds", 0.0) for s in per_task),
                "ms": statistics.mean((s.get("routing") or {}).get("driver_ms_per_request", 0.0) for s in per_task),
                "calls": {m: sum(((s.get("routing") or {}).get("models") or {}).get(m, {}).get("calls", 0)
                                 for s in per_task) for m in (STRONG, FAST)}})
    print(f"\nrouting benchmark: {len(tasks)} task(s) of {SUITE.name}, budget {budget} candidates per run, "
          f"{args.max_kernel_configs} kernel configs per candidate, seeds {','.join(map(str, seeds))}; "
          f"mean±sd over seeds; the router's --max-cost is {args.router_cost_share:g} x the strong arm's spend "
          f"on the same task and seed" + (" (none)" if not args.router_cost_share else ""))
    head = (f"{'arm':<12} {'best obj (geo)':>15} {'QD-score':>15} {'LLM cost $':>15} {'LLM time s':>17} "
            f"{'obj per $':>10} {'strong:fast':>11} {'route ms':>9}")
    print(head)
    for arm, rows in results.items():
        per_dollar = [r["best"] / r["cost"] if r["cost"] > 0 else float("inf") for r in rows]
        calls = f"{sum(r['calls'][STRONG] for r in rows)}:{sum(r['calls'][FAST] for r in rows)}"
        print(f"{arm:<12} {_ms([r['best'] for r in rows]):>15} {_ms([r['qd'] for r in rows]):>15} "
              f"{_ms([r['cost'] for r in rows]):>15} {_ms([r['seconds'] for r in rows]):>17} "
              f"{statistics.mean(per_dollar):>10.1f} {calls:>11} {statistics.mean(r['ms'] for r in rows):>9.4f}")
    ms = router_overhead(2000 if args.smoke else 20000)
    print(f"\nrouter alone: {ms:.4f} ms per request (choose + observe; target <= 0.5 ms)")
    print(f"bench directory: {out}")
    if set(results) != set(ARMS):
        return 0
    strong, router, fixed = results["strong"], results["router"], results["fixed-50/50"]
    mean = lambda rows, k: statistics.mean(r[k] for r in rows)  # noqa: E731
    sd = statistics.stdev([r["best"] for r in strong]) if len(strong) > 1 else 0.0
    print("\ntargets (router vs strong-only):")
    print(f"  best objective within one sd of strong: {mean(router, 'best'):.3f} vs {mean(strong, 'best'):.3f} "
          f"± {sd:.3f}: {'met' if mean(router, 'best') >= mean(strong, 'best') - sd else 'missed'}")
    for key, limit in (("cost", 0.4), ("seconds", 0.5)):
        ratio = mean(router, key) / mean(strong, key) if mean(strong, key) else float("nan")
        print(f"  {key} <= {limit:.0%} of strong: {ratio:.1%}: {'met' if ratio <= limit else 'missed'}")
    per_dollar = {k: mean(v, "best") / mean(v, "cost") for k, v in (("router", router), ("fixed", fixed))
                  if mean(v, "cost") > 0}
    if len(per_dollar) == 2:
        print(f"  objective per dollar vs fixed 50/50: {per_dollar['router']:.1f} vs {per_dollar['fixed']:.1f}: "
              f"{'met' if per_dollar['router'] > per_dollar['fixed'] else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
