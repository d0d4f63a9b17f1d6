"""Verifier speed: seconds per candidate, all gates, for every shipped task.

    python experiments/bench_verifier.py [--variants 3] [--tasks softmax,matmul] [--no-compile]
                                         [--compile-cache DIR] [--json OUT] [--smoke]

For each task in experiments/tasks/: its seed kernels plus a few variants made
by the built-in (offline) mutator, each verified once, sequentially, in this
one process (the sandboxed children are single-threaded: one core).  A warm-up
verification first starts the fork servers and imports the performance model;
its time is reported separately.  Prints a table of median and p90 seconds per
candidate and the median per stage: check (the sandboxed check job and its
judgement), trace (the trace job: span runs and traces), model, compile (the
compile gate, with its cache hit rate over the run), confirm (the picked configs'
span runs and path coverage).  Compiles go to a fresh cache directory unless
``--compile-cache`` names one, so every new candidate pays its compile as in a
search.  ``--smoke`` verifies the relu seed once (a test runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelfoundry.evaluate import verify  # noqa: E402
from kernelfoundry.mutate import BuiltinMutator, MutationRequest, ParentView  # noqa: E402
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


STAGES = ("check", "trace", "model", "compile", "confirm")


def stage_seconds(result) -> dict[str, float]:
    """Seconds per stage of one verdict (gate seconds: the jobs' walls plus their judgement)."""
    by_gate = {g.name: g.seconds for g in result.gates}
    compile_gate = next((g for g in result.gates if g.name == "compile"), None)
    details = compile_gate.details if compile_gate else {}
    return {"check": by_gate.get("correctness", 0.0), "trace": by_gate.get("trace", 0.0),
            "model": by_gate.get("model", 0.0), "compile": by_gate.get("compile", 0.0),
            "confirm": by_gate.get("confirm", 0.0),
            "compile_hits": details.get("cache_hits", 0), "compile_misses": details.get("cache_misses", 0)}


def bench_task(task, variants: int, seed: int, hardware: list[str] | None, *, compile: bool = True,
               compile_cache: str | None = None) -> dict:
    rows = []
    for label, source in candidates(task, variants, seed):
        start = time.perf_counter()
        result = verify(task, source, hardware, seed=seed, compile=compile, compile_cache=compile_cache)
        wall = time.perf_counter() - start
        rows.append({"label": label, "seconds": wall, **stage_seconds(result),
                     "passed": result.passed, "gate": result.gate, "reason": result.reason[:160]})
    secs = [r["seconds"] for r in rows]
    return {"task": task.name, "level": task.level, "n": len(rows), "passed": sum(r["passed"] for r in rows),
            "median_s": statistics.median(secs), "p90_s": percentile(secs, 0.9),
            **{f"median_{s}_s": statistics.median(r[s] for r in rows) for s in STAGES}, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", type=int, default=3, help="mutated variants per seed (default 3)")
    p.add_argument("--tasks", help="comma-separated task names (default: every task file)")
    p.add_argument("--hardware", help="comma-separated hardware (default: each task's list)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="OUT", help="also write all rows as JSON")
    p.add_argument("--no-compile", action="store_true", help="skip the compile gate")
    p.add_argument("--compile-cache", metavar="DIR",
                   help="compile cache to use (default: a fresh temporary one: every compile is cold)")
    p.add_argument("--smoke", action="store_true", help="one quick verification of the relu seed (for tests)")
    args = p.parse_args(argv)
    paths = sorted((REPO / "experiments" / "tasks").glob("*.yaml"))
    if args.smoke:
        args.tasks, args.variants, args.hardware = "relu", 0, args.hardware or "h100"
    if args.tasks:
        wanted = set(args.tasks.split(","))
        paths = [q for q in paths if q.stem in wanted]
    hardware = args.hardware.split(",") if args.hardware else None
    tasks = [load_task(q) for q in paths]
    scratch = None if args.compile_cache else tempfile.TemporaryDirectory(prefix="kf-bench-compile-")
    cache = args.compile_cache or scratch.name
    start = time.perf_counter()
    warm = verify(tasks[0], tasks[0].seed_sources()[0][1], hardware, compile=not args.no_compile,
                  compile_cache=cache)
    warm_s = time.perf_counter() - start
    print(f"warm-up (fork servers start + model import): {warm_s:.2f} s ({'pass' if warm.passed else warm.gate}); "
          f"cpus visible {os.cpu_count()}")
    results = []
    header = (f"{'task':<22} {'lvl':>3} {'n':>3} {'pass':>4} {'median s':>9} {'p90 s':>7} "
              + " ".join(f"{s + ' s':>9}" for s in STAGES))
    print(header)
    print("-" * len(header))
    for task in tasks:
        r = bench_task(task, args.variants, args.seed, hardware, compile=not args.no_compile, compile_cache=cache)
        results.append(r)
        print(f"{r['task']:<22} {r['level']:>3} {r['n']:>3} {r['passed']:>4} {r['median_s']:>9.2f} "
              f"{r['p90_s']:>7.2f} " + " ".join(f"{r[f'median_{s}_s']:>9.2f}" for s in STAGES), flush=True)
    rows = [row for r in results for row in r["rows"]]
    for level in sorted({r["level"] for r in results}):
        secs = [row["seconds"] for r in results if r["level"] == level for row in r["rows"]]
        comp = [row["compile"] for r in results if r["level"] == level for row in r["rows"]]
        print(f"level-{level} overall: median {statistics.median(secs):.2f} s, p90 {percentile(secs, 0.9):.2f} s "
              f"over {len(secs)} candidates; compile gate median {statistics.median(comp):.2f} s")
    hits, misses = sum(r["compile_hits"] for r in rows), sum(r["compile_misses"] for r in rows)
    if hits + misses:
        print(f"compile cache: {hits} of {hits + misses} compiles from the cache ({100 * hits / (hits + misses):.0f}%)")
    if args.json:
        Path(args.json).write_text(json.dumps({"warmup_s": warm_s, "tasks": results}, indent=1))
    if scratch is not None:
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
