"""Compile-gate speed: seconds added per candidate, cold and cached, and where the time goes.

    python experiments/bench_compile.py [--tasks softmax,matmul] [--hardware h100,a100,mi300x]
                                        [--variants 2] [--configs 5] [--json OUT] [--smoke]

For each task in experiments/tasks/: its seed kernels plus a few built-in-mutator
variants.  Each candidate's launch signatures are captured at the first target
shape for up to ``--configs`` configs (default first, like the verifier: the
model's top 4 plus the default), then ``compile_candidate`` runs twice on a
fresh cache: cold (everything compiled) and cached (everything a hit).  The
signature capture (a dry run of ``launch`` under the interpreter, the verifier's
job in the real gate) is timed separately.  A warm-up compile first starts the
compile job's fork server (paid once per process).  Prints a table per task,
the cold time split by stage, and per target the median seconds per compile of
each stage; ``--smoke`` runs one small task on one hardware (used by the tests).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelfoundry.candidate import enumerate_configs, parse_param_space  # noqa: E402
from kernelfoundry.compiler import CompileCache, compile_candidate  # noqa: E402
from kernelfoundry.compiler.capture import capture_task_signatures  # noqa: E402
from kernelfoundry.task import load_task  # noqa: E402

def candidates(task, variants: int, seed: int) -> list[tuple[str, str]]:
    """(label, source) for the task's seeds and *variants* built-in-mutator edits of each."""
    from kernelfoundry.mutate import BuiltinMutator, MutationRequest, ParentView
    out = []
    for path, source in task.seed_sources():
        out.append((path.stem, source))
        for i in range(variants):
            proposal = BuiltinMutator(seed=seed + i).propose(
                MutationRequest(task=task, parent=ParentView(id=0, source=source), seed=seed + i))
            if proposal.source and proposal.source != source:
                out.append((f"{path.stem}+{proposal.description or 'mutation'}"[:48], proposal.source))
    return out


def measure(task, label: str, source: str, hardware: list[str], n_configs: int, cache_root: Path) -> dict:
    configs = enumerate_configs(parse_param_space(source), cap=n_configs)
    t = time.perf_counter()
    sigs = capture_task_signatures(source, task, configs)
    capture_s = time.perf_counter() - t
    cache = CompileCache(cache_root / f"{task.name}-{label}".replace("/", "_"))
    cold = compile_candidate(source, sigs, hardware, cache=cache)
    warm = compile_candidate(source, sigs, hardware, cache=cache)
    per_target: dict[str, dict[str, list[float]]] = {}
    for hw in cold.hardware.values():
        for cfg in hw.configs.values():
            for k in cfg.kernels:
                if not k.cached and hw.target:
                    for stage, s in k.seconds.items():
                        per_target.setdefault(hw.target, {}).setdefault(stage, []).append(s)
    status = {name: h.status for name, h in cold.hardware.items()}
    errors = {name: h.reason for name, h in cold.hardware.items() if h.status in ("error", "partial")}
    return {"task": task.name, "level": task.level, "candidate": label, "configs": len(configs),
            "compiles": cold.cache_misses, "capture_s": round(capture_s, 3), "cold_s": cold.seconds,
            "cached_s": warm.seconds, "cached_hits": warm.cache_hits, "stages": cold.stage_seconds,
            "per_target": per_target, "status": status, "errors": errors}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def report(rows: list[dict], warmup_s: float) -> str:
    lines = [f"warm-up (fork server start + first compile): {warmup_s:.2f} s", "",
             "| task | level | n | configs | compiles/cand | capture s | cold median s | cold p90 s | cached median s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for task in sorted({r["task"] for r in rows}):
        rs = [r for r in rows if r["task"] == task]
        cold = [r["cold_s"] for r in rs]
        lines.append(f"| {task} | {rs[0]['level']} | {len(rs)} | {statistics.median([r['configs'] for r in rs]):g} | "
                     f"{statistics.median([r['compiles'] for r in rs]):g} | "
                     f"{statistics.median([r['capture_s'] for r in rs]):.2f} | {statistics.median(cold):.2f} | "
                     f"{pct(cold, 0.9):.2f} | {statistics.median([r['cached_s'] for r in rs]):.3f} |")
    for level in sorted({r["level"] for r in rows}):
        cold = [r["cold_s"] for r in rows if r["level"] == level]
        lines.append(f"\nlevel {level}: {len(cold)} candidates, cold median {statistics.median(cold):.2f} s, "
                     f"p90 {pct(cold, 0.9):.2f} s, cached median "
                     f"{statistics.median([r['cached_s'] for r in rows if r['level'] == level]):.3f} s")
    stages = sorted({s for r in rows for s in r["stages"]})
    lines += ["", "cold time by stage, median over candidates (CPU seconds summed over compiles; *_wall: elapsed):",
              "| " + " | ".join(stages) + " |", "|" + "---|" * len(stages),
              "| " + " | ".join(f"{statistics.median([r['stages'].get(s, 0.0) for r in rows]):.3f}"
                                for s in stages) + " |"]
    lines += ["", "per target, median seconds per compile:"]
    targets = sorted({t for r in rows for t in r["per_target"]})
    for target in targets:
        merged: dict[str, list[float]] = {}
        for r in rows:
            for stage, values in r["per_target"].get(target, {}).items():
                merged.setdefault(stage, []).extend(values)
        n = len(merged.get("job_request", []))
        parts = ", ".join(f"{s} {statistics.median(v):.3f}" for s, v in sorted(merged.items()))
        lines.append(f"- {target} ({n} compiles): {parts}")
    failing = [(r["candidate"], r["errors"]) for r in rows if r["errors"]]
    lines.append("")
    lines.append("every candidate compiled on every target" if not failing else
                 "did not compile everywhere:\n" + "\n".join(f"- {c}: {e}" for c, e in failing))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    ap.add_argument("--hardware", default="", help="comma-separated hardware (default: each task's own list)")
    ap.add_argument("--variants", type=int, default=2)
    ap.add_argument("--configs", type=int, default=5, help="configs per candidate (model top k + default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="")
    ap.add_argument("--smoke", action="store_true", help="one small task, one hardware, no variants")
    args = ap.parse_args(argv)
    if args.smoke:
        args.tasks, args.hardware, args.variants, args.configs = "relu", "h100", 0, 2
    names = [n for n in args.tasks.split(",") if n] or sorted(p.stem for p in (REPO / "experiments/tasks").glob("*.yaml"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="kf-bench-compile-") as tmp:
        root = Path(tmp)
        first = load_task(REPO / "experiments/tasks" / f"{names[0]}.yaml")
        t = time.perf_counter()
        measure(first, "warm-up", first.seed_sources()[0][1], ["h100"], 1, root)
        warmup_s = time.perf_counter() - t
        for name in names:
            task = load_task(REPO / "experiments/tasks" / f"{name}.yaml")
            hardware = [h for h in args.hardware.split(",") if h] or list(task.hardware)
            for label, source in candidates(task, args.variants, args.seed):
                rows.append(measure(task, label, source, hardware, args.configs, root))
                r = rows[-1]
                print(f"{name:22s} {label[:40]:40s} configs {r['configs']} compiles {r['compiles']:2d} "
                      f"cold {r['cold_s']:.2f} s cached {r['cached_s']:.3f} s {r['status']}", flush=True)
    print()
    print(report(rows, warmup_s))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "warmup_s": warmup_s}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
