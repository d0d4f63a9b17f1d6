"""Verifier speed: seconds per candidate, all gates, for every shipped task.

    python experiments/bench_verifier.py [--variants 3] [--tasks softmax,matmul] [--json OUT]

For each task in experiments/tasks/: its seed kernels plus a few variants made
by the built-in (offline) mutator, each verified once, sequentially, in this
one process (the sandboxed child is single-threaded: one core).  A warm-up
verification first starts the fork server and imports the performance model;
its time is reported separately.  Prints a table of median and p90 seconds per
candidate and the median split by stage (hack+sandbox = static gate plus the
sandboxed load/correctness/trace; model = scoring + descriptors).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelfoundry.evaluate.pipeline import verify  # noqa: E402
from kernelfoundry.mutate.base import MutationRequest, ParentView  # noqa: E402
from kernelfoundry.mutate.builtin import BuiltinMutator  # noqa: E402
from kernelfoundry.task import load_task  # noqa: E402


def candidates(task, variants: int, seed: int) -> list[tuple[str, str]]:
    """(label, source) for the task's seeds and *variants* builtin-mutator edits of them."""
    out = []
    for path, source in task.seed_sources():
        out.append((path.name, source))
        for i in range(variants):
            proposal = BuiltinMutator(seed=seed + i).propose(
                MutationRequest(task=task, parent=ParentView(id=0, source=source), seed=seed + i))
            if proposal.source:
                out.append((f"{path.stem}+{proposal.description or 'mutation'}"[:60], proposal.source))
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def bench_task(task, variants: int, seed: int, hardware: list[str] | None) -> dict:
    rows = []
    for label, source in candidates(task, variants, seed):
        start = time.perf_counter()
        result = verify(task, source, hardware, seed=seed)
        wall = time.perf_counter() - start
        model = sum(g.seconds for g in result.gates if g.name == "model")
        rows.append({"label": label, "seconds": wall, "model_s": model, "sandbox_s": wall - model,
                     "passed": result.passed, "gate": result.gate, "reason": result.reason[:160]})
    secs = [r["seconds"] for r in rows]
    return {"task": task.name, "level": task.level, "n": len(rows), "passed": sum(r["passed"] for r in rows),
            "median_s": statistics.median(secs), "p90_s": percentile(secs, 0.9),
            "median_sandbox_s": statistics.median(r["sandbox_s"] for r in rows),
            "median_model_s": statistics.median(r["model_s"] for r in rows), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", type=int, default=3, help="mutated variants per seed (default 3)")
    p.add_argument("--tasks", help="comma-separated task names (default: every task file)")
    p.add_argument("--hardware", help="comma-separated hardware (default: each task's list)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="OUT", help="also write all rows as JSON")
    args = p.parse_args(argv)
    paths = sorted((REPO / "experiments" / "tasks").glob("*.yaml"))
    if args.tasks:
        wanted = set(args.tasks.split(","))
        paths = [q for q in paths if q.stem in wanted]
    hardware = args.hardware.split(",") if args.hardware else None
    tasks = [load_task(q) for q in paths]
    start = time.perf_counter()
    warm = verify(tasks[0], tasks[0].seed_sources()[0][1], hardware)
    warm_s = time.perf_counter() - start
    print(f"warm-up (fork server start + model import): {warm_s:.2f} s ({'pass' if warm.passed else warm.gate}); "
          f"cpus visible {os.cpu_count()}")
    results = []
    header = f"{'task':<22} {'lvl':>3} {'n':>3} {'pass':>4} {'median s':>9} {'p90 s':>7} {'sandbox s':>9} {'model s':>8}"
    print(header)
    print("-" * len(header))
    for task in tasks:
        r = bench_task(task, args.variants, args.seed, hardware)
        results.append(r)
        print(f"{r['task']:<22} {r['level']:>3} {r['n']:>3} {r['passed']:>4} {r['median_s']:>9.2f} "
              f"{r['p90_s']:>7.2f} {r['median_sandbox_s']:>9.2f} {r['median_model_s']:>8.2f}", flush=True)
    level1 = [row["seconds"] for r in results if r["level"] == 1 for row in r["rows"]]
    if level1:
        print(f"level-1 overall: median {statistics.median(level1):.2f} s, p90 {percentile(level1, 0.9):.2f} s "
              f"over {len(level1)} candidates (target: median <= 5 s)")
    if args.json:
        Path(args.json).write_text(json.dumps({"warmup_s": warm_s, "tasks": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
