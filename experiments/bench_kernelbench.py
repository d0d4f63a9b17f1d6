"""KernelBench coverage: how many real problem files get a correct starting kernel, and how fast it verifies.

    python experiments/bench_kernelbench.py [DIR_OR_FILE ...] [--verify] [--sample N] [--json OUT] [--smoke]

Default folders: ``../shared/kernelbench/level1`` and ``level2`` (KernelBench's own files, read
where they lie).  For every problem file: the sandboxed import (does it become a task?), the
seed generator (is there a starting kernel, or which op has no template?), and the load and
correctness gates on that seed at the task's check shapes (the generated seed is our own
code, so this runs in-process, ``check_trusted``).  With ``--verify`` every correct seed also
goes through the whole verifier (sandboxed: check, trace at the target shapes, model, compile,
confirm), and its wall seconds per stage are reported, with the verdicts that failed and why
(a failure for the verifier's own memory or time limit is a false rejection).  Timed verifies run
alone: every import finishes first, and one untimed verify starts the fork servers, as a search's
workers have them running.

Prints one line per problem, then per level: files, imported, seeded, correct (and verified),
and every failure counted by category.  ``--smoke`` runs one of the project's own example
problems with ``--verify`` (a test runs it).
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelfoundry.errors import TaskError  # noqa: E402
from kernelfoundry.kernelbench import failure_category as category, import_problem, level_of, write_task  # noqa: E402

SHARED = REPO.parent / "shared" / "kernelbench"
#: The verifier's stages. The trace job runs beside the check job, so their seconds overlap and the
#: stages add up to more than a verify's wall time.
STAGES = ("correctness", "trace", "model", "compile", "confirm")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def import_one(path: Path) -> dict:
    start = time.perf_counter()
    row = {"file": path.name, "level": level_of(path), "imported": False, "seeded": False, "correct": None,
           "import_s": 0.0}
    try:
        imported = import_problem(path)
    except TaskError as exc:
        row["category"] = category("import", str(exc))
        row["reason"] = str(exc)
        return row
    finally:
        row["import_s"] = round(time.perf_counter() - start, 2)
    row["imported"] = True
    row["seeded"] = imported.seed_source is not None
    if not row["seeded"]:
        row["category"] = category("seed", imported.no_seed_reason or "")
        row["reason"] = imported.no_seed_reason
    row["_imported"] = imported
    return row


def check_one(row: dict, folder: Path, verify: bool) -> None:
    """The correctness gate on the seed (in-process); with *verify*, the whole sandboxed verifier."""
    from kernelfoundry.evaluate import check_trusted
    from kernelfoundry.task import load_task
    imported = row.pop("_imported")
    task_file = write_task(imported, folder / f"{Path(row['file']).stem}.yaml")
    task = load_task(task_file)
    start = time.perf_counter()
    try:
        gate = check_trusted(imported.seed_source, task, profiles=("normal", "large"))
    except Exception as exc:  # noqa: BLE001 - a crash of our own seed is a finding, not a bench failure
        gate = None
        row["reason"] = f"the check crashed: {type(exc).__name__}: {str(exc)[:200]}"
    row["check_s"] = round(time.perf_counter() - start, 2)
    row["correct"] = bool(gate is not None and gate.passed)
    if not row["correct"]:
        row.setdefault("reason", gate.reason if gate is not None else "")
        row["category"] = category(f"seed incorrect ({gate.name if gate else 'crash'})", row["reason"] or "")
        return
    if verify:
        from kernelfoundry.evaluate import default_limits
        from kernelfoundry.evaluate import verify as run_verifier
        warm_up()
        start = time.perf_counter()
        result = run_verifier(task, imported.seed_source, None, seed=0, limits=default_limits(task))
        row["verify_s"] = round(time.perf_counter() - start, 2)
        row["stages"] = {g.name: round(g.seconds, 2) for g in result.gates}
        compiled = next((g for g in result.gates if g.name == "compile"), None)
        if compiled is not None:            # an empty compile cache costs a level-2 chain most of its verify
            row["compile_cache"] = [int(compiled.details.get("cache_hits", 0)),
                                    int(compiled.details.get("cache_misses", 0))]
        row["verified"] = result.passed
        row["objective"] = result.objective
        if not result.passed:
            row["verify_gate"], row["verify_reason"] = result.gate, result.reason[:300]


#: The warm-up verify: one of the project's own tasks, so no timed problem finds its own caches warm.
WARM_UP_TASK = REPO / "experiments" / "tasks" / "relu.yaml"


@functools.cache
def warm_up() -> float:
    """Start the verifier's fork servers with one untimed verify (once per bench), as a search's
    workers have them started: the first timed verify would otherwise pay for their start (the
    server imports torch and Triton, about 5 s, and a second job waits for it).  Its seconds."""
    from kernelfoundry.evaluate import default_limits, verify
    from kernelfoundry.task import load_task
    start = time.perf_counter()
    task = load_task(WARM_UP_TASK)
    verify(task, task.seed_sources()[0][1], None, seed=0, limits=default_limits(task))
    seconds = time.perf_counter() - start
    print(f"warm-up (fork servers start; {WARM_UP_TASK.name}'s seed, untimed): {seconds:.1f} s", flush=True)
    return seconds


def problem_files(items: list[str]) -> list[Path]:
    out = []
    for item in items:
        p = Path(item)
        out += sorted(p.glob("*.py")) if p.is_dir() else [p]
    return out


def summarize(rows: list[dict], verify: bool) -> list[str]:
    lines = []
    for level in sorted({r["level"] for r in rows}):
        rs = [r for r in rows if r["level"] == level]
        n = len(rs)

        def share(k: int) -> str:
            return f"{k}/{n} ({100 * k / n:.0f}%)"
        imported = sum(r["imported"] for r in rs)
        seeded = sum(r["seeded"] for r in rs)
        correct = sum(bool(r["correct"]) for r in rs)
        lines.append(f"level {level}: {n} files; imported {share(imported)}, starting kernel {share(seeded)}, "
                     f"correct at the check shapes {share(correct)}")
        if verify:
            done = [r for r in rs if "verify_s" in r]
            if done:
                secs = [r["verify_s"] for r in done]
                lines.append(f"  verify of the correct seeds: {sum(r['verified'] for r in done)}/{len(done)} pass; "
                             f"median {statistics.median(secs):.1f} s, p90 {percentile(secs, 0.9):.1f} s; "
                             "median per stage (checks and trace overlap): " + ", ".join(
                                 f"{s} {statistics.median(r['stages'].get(s, 0.0) for r in done):.1f} s"
                                 for s in STAGES))
                hits = sum(r["compile_cache"][0] for r in done if "compile_cache" in r)
                misses = sum(r["compile_cache"][1] for r in done if "compile_cache" in r)
                if hits + misses:
                    lines.append(f"  compile cache: {hits} of {hits + misses} compiles from the cache "
                                 f"({100 * hits / (hits + misses):.0f}%; the compile stage above is for that share)")
                for r in done:
                    if not r["verified"]:
                        lines.append(f"    rejected: {r['file']}: {r['verify_gate']}: {r['verify_reason'][:160]}")
        for cat, k in Counter(r["category"] for r in rs if "category" in r).most_common():
            lines.append(f"  {k:3d}  {cat}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="*", help="problem files or folders (default: the shared level1 and level2)")
    p.add_argument("--verify", action="store_true", help="also run the whole verifier on every correct seed")
    p.add_argument("--sample", type=int, help="a random sample of N problems (see --seed)")
    p.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    p.add_argument("--jobs", type=int, default=2, help="sandboxed imports in flight (default 2)")
    p.add_argument("--json", metavar="OUT", help="also write every row as JSON")
    p.add_argument("--smoke", action="store_true", help="one of the project's own example problems, verified")
    args = p.parse_args(argv)
    if args.smoke:
        args.paths, args.verify = [str(REPO / "experiments" / "kernelbench" / "level1" / "1_Swish_Scaled.py")], True
    paths = args.paths or [str(SHARED / "level1"), str(SHARED / "level2")]
    files = problem_files(paths)
    if not files:
        print(f"no problem files under {', '.join(paths)}", file=sys.stderr)
        return 2
    if args.sample:
        files = sorted(random.Random(args.seed).sample(files, min(args.sample, len(files))))
        print("sample: " + ", ".join(f.name for f in files))
    rows: list[dict] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kf-bench-kb-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        imported = pool.map(import_one, files)             # imports in flight while the checks run here
        if args.verify:                                    # ... but never beside a timed verify
            imported = list(imported)
        for row in imported:
            if row["seeded"]:
                check_one(row, Path(tmp), args.verify)
            rows.append(row)
            status = "correct" if row["correct"] else row.get("category", "?")
            extra = f"  verify {row['verify_s']:.1f} s {'pass' if row['verified'] else 'FAIL'}" \
                if "verify_s" in row else ""
            print(f"L{row['level']} {row['file'][:60]:<60} {status}{extra}", flush=True)
    print(f"\n{len(rows)} problems in {time.perf_counter() - start:.0f} s")
    print("\n".join(summarize(rows, args.verify)))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
