"""``python -m kernelfoundry.bench SUITE.yaml``: compare search methods on a task suite.

Every (task, method, seed) is one evolve run with the same candidate budget,
under ``OUT/runs/<task>/<method>/seed<S>/``; ``OUT/results.csv`` has a row per
run and ``OUT/report.md`` the aggregate tables and plots (see
:mod:`kernelfoundry.bench_report`).  A bench that is interrupted and started
again with the same ``--out`` skips runs that finished and resumes the others.
Runs of one bench share a verdict cache (``OUT/verdicts.sqlite``): a kernel that
several methods or seeds propose is verified once (``--no-verdict-cache`` turns
it off; verdicts do not depend on the run, see ``evaluate/verdict_cache.py``).

Memory (``--memory-mode``, docs/memory.md): ``cold`` (the default) runs every run without
the experience memory, so methods compare on equal terms; ``shared`` lets every run read
and write one memory (``--memory PATH``, default ``OUT/memory.sqlite``); ``loo`` is the
leave-one-out test of the memory: per seed, every task runs cold while recording into
``OUT/memory/seed<S>.sqlite``, then every task runs again as ``<method>+memory`` with a copy
of that memory from which its own task was removed, at the same budget.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .errors import UserError
from .evolve import EvolveConfig
from .kernelbench import load_task_or_problem
from .task import load_task

#: method name -> (strategy, prompt evolution, template tuning)
METHODS: dict[str, tuple[str, bool, bool]] = {
    "map-elites": ("map-elites", True, True),
    "greedy": ("greedy", True, True),
    "random": ("random", True, True),
    "map-elites-no-prompts": ("map-elites", False, True),
    "map-elites-no-tuning": ("map-elites", True, False),
}
DEFAULT_METHODS = ("map-elites", "greedy", "random")
MEMORY_MODES = ("cold", "shared", "loo")
MEMORY_SUFFIX = "+memory"


@dataclass
class Suite:
    name: str
    tasks: list[Path]
    budget: int | None
    path: Path


def load_suite(path: str | Path) -> Suite:
    """A suite file, or a directory of KernelBench problem files (every one a task; docs/kernelbench.md)."""
    path = Path(path)
    if path.is_dir():
        from .kernelbench import problems_in
        return Suite(name=path.resolve().name, tasks=[p.resolve() for p in problems_in(path)], budget=None,
                     path=path)
    if not path.is_file():
        raise UserError(f"suite file {path} does not exist.")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise UserError(f"suite file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list) or not data["tasks"]:
        raise UserError(f"suite file {path}: field 'tasks' must be a non-empty list of task file paths.")
    unknown = set(data) - {"name", "tasks", "budget", "description"}
    if unknown:
        raise UserError(f"suite file {path}: unknown field(s) {sorted(unknown)}; known: name, tasks, budget.")
    tasks = []
    for i, t in enumerate(data["tasks"]):
        p = (path.parent / str(t)).resolve()
        if p.is_dir():                         # a directory of KernelBench problem files
            from .kernelbench import problems_in
            tasks += [q.resolve() for q in problems_in(p)]
            continue
        if not p.is_file():
            raise UserError(f"suite file {path}: tasks[{i}] names {p}, which does not exist.")
        tasks.append(p)
    budget = data.get("budget")
    if budget is not None and (not isinstance(budget, int) or budget < 1):
        raise UserError(f"suite file {path}: field 'budget' must be a positive int; got {budget!r}.")
    return Suite(name=str(data.get("name", path.stem)), tasks=tasks, budget=budget, path=path)


def load_suite_tasks(suite: Suite, *, drafts: bool) -> tuple[list, list[Path], list[dict[str, Any]]]:
    """The suite's tasks and their paths, and the KernelBench problems that cannot start.

    A task file that does not load is an error. A KernelBench problem file (``.py``) that does
    not import, or has no starting kernel (no template for an op, and no LLM to draft one:
    *drafts* is whether models are configured), is left out of the runs and returned as
    ``{"task", "level", "category", "reason"}``: KernelBench counts it as unsolved.
    """
    from .errors import TaskError
    from .kernelbench import failure_category, level_of, task_name
    tasks, paths, unstarted = [], [], []
    for path in suite.tasks:
        if path.suffix != ".py":
            tasks.append(load_task(path))
            paths.append(path)
            continue
        try:
            tasks.append(load_task_or_problem(path, allow_no_seed=drafts))
            paths.append(path)
        except TaskError as exc:
            reason = str(exc)
            stage = "seed" if "no starting kernel" in reason else "import"
            unstarted.append({"task": task_name(path), "level": level_of(path),
                              "category": failure_category(stage, reason), "reason": reason})
    return tasks, paths, unstarted


def run_one(task_path: Path, method: str, seed: int, *, budget: int, workers: int, models: list[str],
            run_dir: Path, verdict_cache: Path | None = None, memory: Path | None = None,
            memory_mode: str = "off", stop=None, device: str = "auto", device_top_k: int = 8) -> dict[str, Any]:
    """One evolve run (resumed if a previous bench left it unfinished); returns its result row.

    A run that already reached the budget, or stopped early by itself (``stop_reason``), is
    read back as it is: extending it would make its result depend on how often the bench ran.
    """
    from .bench_report import row_from_run
    from .search import STORE_NAME, run_evolution
    row = finished_row(run_dir, method, seed, budget)
    if row is not None:
        return row
    strategy, prompts, tuning = METHODS[method.removesuffix(MEMORY_SUFFIX)]
    resume = run_dir if (run_dir / STORE_NAME).exists() else None
    if resume is not None and _never_started(run_dir):
        resume = None                      # its seed verdicts would be replayed: start again, keep the old one
        run_dir.rename(run_dir.with_name(f"{run_dir.name}.no-start-{time.strftime('%Y%m%d-%H%M%S')}"))
    cfg = EvolveConfig(task=task_path, budget=budget, workers=workers, seed=seed,
                       out=None if resume else run_dir, resume=resume, models=list(models), strategy=strategy,
                       prompt_evolution=prompts, tuning=tuning, quiet=True, verdict_cache=verdict_cache,
                       memory=memory, memory_mode=memory_mode if memory is not None else "off",
                       device=device, device_top_k=device_top_k)
    summary, _ = run_evolution(cfg, stop=stop)
    return row_from_run(run_dir, method=method, seed=seed, summary=summary,
                        seconds=float(summary.get("wall_seconds", 0.0)))


@dataclass
class PlannedRun:
    path: Path                       # the task file
    task: Any
    method: str                      # a METHODS name, with MEMORY_SUFFIX for a leave-one-out memory run
    seed: int
    memory: Path | None = None
    memory_mode: str = "off"         # EvolveConfig.memory_mode
    loo_source: Path | None = None   # copy this memory without the task before the run starts


def plan_runs(tasks: list[tuple[Path, Any]], methods: list[str], seeds: list[int], out: Path, mode: str,
              memory: Path | None = None) -> list[PlannedRun]:
    """Every run of a bench, in the order it must run (leave-one-out: cold runs of a seed first)."""
    if mode == "cold":
        return [PlannedRun(p, t, m, s) for p, t in tasks for m in methods for s in seeds]
    if mode == "shared":
        shared = memory or out / "memory.sqlite"
        return [PlannedRun(p, t, m, s, shared, "on") for p, t in tasks for m in methods for s in seeds]
    plan = []
    for s in seeds:
        recorded = out / "memory" / f"seed{s}.sqlite"
        plan += [PlannedRun(p, t, m, s, recorded, "write") for p, t in tasks for m in methods]
        plan += [PlannedRun(p, t, m + MEMORY_SUFFIX, s, out / "memory" / f"seed{s}-without-{t.name}.sqlite", "on",
                            loo_source=recorded) for p, t in tasks for m in methods]
    return plan


def copy_memory_without(source: Path, dest: Path, task: str) -> None:
    """A copy of the memory *source* that knows nothing of *task* (a leave-one-out run's memory)."""
    from .memory import ExperienceStore
    if not source.is_file():
        raise UserError(f"the leave-one-out memory {source} is missing: its cold runs did not record.")
    with ExperienceStore(source, create=False) as src:
        for stale in (dest, dest.with_name(dest.name + "-wal"), dest.with_name(dest.name + "-shm")):
            stale.unlink(missing_ok=True)
        import sqlite3
        dst = sqlite3.connect(str(dest))
        src.db.backup(dst)
        dst.close()
    with ExperienceStore(dest) as copy:
        copy.delete_task(task)


TIE = 0.005     # leave-one-out table: relative difference below which cold and memory tie


def _compare(memory: float, cold: float) -> str:
    """"win", "tie" or "loss" of *memory* against *cold* (ties within :data:`TIE`)."""
    if abs(memory - cold) <= TIE * max(abs(memory), abs(cold)):
        return "tie"
    return "win" if memory > cold else "loss"


def _with_loo(out: Path, report: str, rows: list[dict[str, Any]], methods: list[str], seeds: list[int]) -> str:
    """The report, plus the leave-one-out verdict when the bench has memory runs (also in report.md)."""
    from . import bench_report
    pairs = [(m, m + MEMORY_SUFFIX) for m in methods if m + MEMORY_SUFFIX in methods]
    if not pairs:
        return report
    lines = ["", "## Leave-one-out memory test", "",
             "The test: memory wins when it has the higher summed QD-score and the higher geomean best "
             f"speedup; values within {TIE:.1%} of each other tie (the same kernels found in another order "
             "differ in the last digits).  Anytime: the geomean over tasks of each run's best-so-far averaged over its "
             "budget (higher when the same best comes sooner; not part of the test).", "",
             "| method | seed | QD-score cold | QD-score memory | geomean best cold | geomean best memory "
             "| anytime cold | anytime memory | memory wins |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for cold, warm in pairs:
        for seed in seeds:
            a = [r for r in rows if r["method"] == cold and r["seed"] == seed]
            b = [r for r in rows if r["method"] == warm and r["seed"] == seed]
            tasks = {r["task"] for r in a} & {r["task"] for r in b}
            if not tasks:
                continue
            qa, qb = (sum(r["qd_score"] for r in x if r["task"] in tasks) for x in (a, b))
            ga, gb = (bench_report._geomean_or_zero([r["best_objective"] or 0.0 for r in x if r["task"] in tasks])
                      for x in (a, b))
            aa, ab = (bench_report._geomean_or_zero([r.get("anytime_best") or 0.0 for r in x if r["task"] in tasks])
                      for x in (a, b))
            verdicts = {"QD": _compare(qb, qa), "best": _compare(gb, ga), "anytime": _compare(ab, aa)}
            wins = "yes" if verdicts["QD"] == verdicts["best"] == "win" else (
                "no (" + ", ".join(f"{k} {v}" for k, v in verdicts.items()) + ")")
            lines.append(f"| {cold} | {seed} | {qa:.2f} | {qb:.2f} | {ga:.3f} | {gb:.3f} | {aa:.3f} | {ab:.3f} "
                         f"| {wins} |")
    section = "\n".join(lines) + "\n"
    with open(out / "report.md", "a", encoding="utf-8") as fh:
        fh.write(section)
    return report + "\n" + section


def run_dir_of(out: Path, task: str, method: str, seed: int) -> Path:
    """Where a bench in *out* keeps the run of (task, method, seed)."""
    return out / "runs" / task / method / f"seed{seed}"


def finished_row(run_dir: Path, method: str, seed: int, budget: int) -> dict[str, Any] | None:
    """The result row of the run in *run_dir* if it has ended (see :func:`_ended_summary`), else None."""
    from .bench_report import row_from_run
    from .search import STORE_NAME, SUMMARY_NAME
    if not (run_dir / STORE_NAME).exists():
        return None
    done = _ended_summary(run_dir / SUMMARY_NAME, budget)
    if done is None:
        return None
    if int(done.get("budget", budget)) > budget and int(done["n_candidates"]) > budget:
        raise UserError(f"the run in {run_dir} was made with budget {done['budget']} and has evaluated "
                        f"{done['n_candidates']} candidates, more than --budget {budget}; a bench compares "
                        f"equal budgets: use --budget {done['budget']} or another --out.")
    return row_from_run(run_dir, method=method, seed=seed, summary=done, seconds=float(done.get("wall_seconds", 0.0)))


def _never_started(run_dir: Path) -> bool:
    """Did the run in *run_dir* end without a correct kernel (no seed passed)?  Resuming it would replay
    its stored seed verdicts, which a verifier fixed since may no longer give."""
    from .search import SUMMARY_NAME
    try:
        summary = json.loads((run_dir / SUMMARY_NAME).read_text())
    except (OSError, ValueError):
        return False                       # stopped before its summary: resume it
    return int(summary.get("n_correct", 0)) == 0 and int(summary.get("n_candidates", 0)) > 0


def _ended_summary(path: Path, budget: int) -> dict[str, Any] | None:
    """The run's summary if it reached *budget* or stopped by itself; None if it should go on."""
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if int(summary.get("n_candidates", 0)) >= budget or summary.get("stop_reason"):
        return summary
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelfoundry.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", type=Path, help="suite file (experiments/suites/*.yaml), or a directory of KernelBench "
                                            "problem files (docs/kernelbench.md)")
    p.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                   help=f"comma-separated methods; known: {', '.join(METHODS)}")
    p.add_argument("--budget", type=int, help="candidates per run (default: the suite's budget, else 50)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds, e.g. 0,1,2")
    p.add_argument("--out", type=Path, help="output directory (default: archives/bench/<suite>-<UTC time>)")
    p.add_argument("--workers", type=int, default=0,
                   help="Ray workers per run (0 = one per CPU of this machine)")
    p.add_argument("--ray-address", help="a Ray cluster to run on (default: $RAY_ADDRESS, else a local Ray); "
                                         "see docs/cluster.md")
    p.add_argument("--parallel", type=int, default=0,
                   help="runs at once (0 = as many as the cluster's CPUs hold at --workers each; 1 locally)")
    p.add_argument("--model", action="append", default=[], dest="models", help="litellm model(s) for LLM runs")
    p.add_argument("--memory-mode", choices=MEMORY_MODES, default="cold",
                   help="cold: no run uses the experience memory; shared: all runs read and write --memory; "
                        "loo: leave-one-out test of the memory (each task cold, then with the other tasks' memory)")
    p.add_argument("--memory", type=Path, metavar="PATH",
                   help="memory file for --memory-mode shared (default: OUT/memory.sqlite)")
    p.add_argument("--no-verdict-cache", action="store_true",
                   help="verify every run's kernels afresh instead of sharing verdicts between runs")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: rewrite results.csv and report.md of --out from its finished runs")
    from .evolve import add_device_options
    add_device_options(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    args = p.parse_args(argv)
    if args.report_only and args.out is None:
        p.error("--report-only needs --out (the bench directory to report on)")
    try:
        return _run(args)
    except UserError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


def _run(args) -> int:
    from . import bench_report
    from .evolve import DEFAULT_ARCHIVES
    suite = load_suite(args.suite)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise UserError(f"--methods: unknown method(s) {bad}; known: {', '.join(METHODS)}.")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--seeds must be comma-separated integers; got {args.seeds!r}.") from None
    if not seeds:
        raise UserError(f"--seeds names no seed; got {args.seeds!r}.")
    for flag, values in (("--methods", methods), ("--seeds", seeds)):
        if len(set(values)) != len(values):
            raise UserError(f"{flag} names {sorted({v for v in values if values.count(v) > 1})} more than once.")
    if args.budget is not None and args.budget < 1:
        raise UserError(f"--budget must be at least 1; got {args.budget}.")
    if args.device == "cuda":                # no GPU here (and no cluster to ask): exit 2 before any run starts
        from .measure import resolve_device
        from .search import resolve_address
        if resolve_address(args.ray_address) is None:
            resolve_device(args.device, top_k=args.device_top_k)
    if args.memory is not None and args.memory_mode != "shared":
        raise UserError(f"--memory {args.memory} is for --memory-mode shared (cold uses no memory; loo keeps its "
                        "own under OUT/memory/).")
    budget = args.budget or suite.budget or 50
    tasks, task_paths, unstarted = load_suite_tasks(suite, drafts=bool(args.models))
    if not tasks:
        raise UserError(f"no problem of {suite.path} can start: " + "; ".join(
            f"{u['task']}: {u['reason']}" for u in unstarted[:5]) + ("; ..." if len(unstarted) > 5 else ""))
    names = [t.name for t in tasks]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"suite file {suite.path}: tasks named {twice} appear more than once (a run directory "
                        f"is named after its task, so each task name must be unique in a suite).")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = args.out or DEFAULT_ARCHIVES / "bench" / f"{suite.name}-{stamp}"
    plan = plan_runs(list(zip(task_paths, tasks)), methods, seeds, out, args.memory_mode, args.memory)
    methods = list(dict.fromkeys(p.method for p in plan))
    if unstarted:
        print(f"{len(unstarted)} of {len(suite.tasks)} problems have no starting kernel and count as unsolved "
              f"(by category in the report): " + ", ".join(u["task"] for u in unstarted), flush=True)
    if args.report_only:
        return _report_only(out, suite, tasks, plan, methods, seeds, budget, unstarted)
    out.mkdir(parents=True, exist_ok=True)
    rows, failed = _run_plan(args, out, plan, budget)
    if not rows:
        raise UserError(f"no run of the bench finished; {len(failed)} failed:\n  " + "\n  ".join(failed))
    report = bench_report.write_report(out, rows, suite=suite.name, budget=budget, methods=methods, seeds=seeds,
                                       levels={t.name: t.level for t in tasks}, left_out=failed,
                                       unstarted=unstarted)
    report = _with_loo(out, report, rows, methods, seeds)
    print(f"\n{report}\nresults: {out / 'results.csv'}\nreport:  {out / 'report.md'}")
    if failed:
        print(f"\n{len(failed)} run(s) failed and are left out of the report (listed in it):\n  "
              + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


def _run_plan(args, out: Path, plan: list["PlannedRun"], budget: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Run the plan, several runs at once on a cluster (bench_parallel.py); (rows in plan order, failures)."""
    import threading

    from . import bench_report
    from .bench_parallel import default_parallel, run_all, workers_per_run
    from .search import cluster_cpus, resolve_address, start_ray
    if args.parallel < 0 or args.workers < 0:
        raise UserError("--parallel and --workers must be 0 (auto) or positive.")
    workers = workers_per_run(args.workers)
    started_ray = start_ray(workers=workers, address=args.ray_address)
    done: dict[int, dict[str, Any]] = {}
    failed: list[str] = []
    lock = threading.Lock()
    started = time.time()

    def one(i: int, run: PlannedRun, stop) -> None:
        run_dir = run_dir_of(out, run.task.name, run.method, run.seed)
        head = f"[{i + 1}/{len(plan)}] {run.task.name:<22} {run.method:<22} seed {run.seed}:"
        try:
            if run.loo_source is not None and not run_dir.exists():
                copy_memory_without(run.loo_source, run.memory, run.task.name)
            row = run_one(run.path, run.method, run.seed, budget=budget, workers=workers, models=args.models,
                          run_dir=run_dir, memory=run.memory, memory_mode=run.memory_mode, stop=stop,
                          device=args.device, device_top_k=args.device_top_k,
                          verdict_cache=None if args.no_verdict_cache else out / "verdicts.sqlite")
        except UserError as exc:          # this run cannot go on; the others can
            with lock:
                failed.append(f"{run.task.name}/{run.method}/seed{run.seed} failed: {exc}")
                print(f"{head} FAILED: {exc}", flush=True)
            return
        best = row["best_objective"]
        with lock:
            done[i] = row
            print(f"{head} best {'-' if best is None else f'{best:.3f}x'}  QD {row['qd_score']:.2f}  "
                  f"{row['seconds']:.0f}s  (elapsed {time.time() - started:.0f}s)", flush=True)
            bench_report.write_csv(out / "results.csv", [done[k] for k in sorted(done)])

    try:
        on_cluster = resolve_address(args.ray_address) is not None
        parallel = args.parallel or (default_parallel(workers, cluster_cpus()) if on_cluster else 1)
        if parallel > 1:
            print(f"{len(plan)} runs, {parallel} at a time, {workers} workers each, on {cluster_cpus():g} CPUs",
                  flush=True)
        run_all(plan, one, parallel=parallel)
    except KeyboardInterrupt:
        err = UserError(f"interrupted: every finished candidate is stored; run the same command with --out {out} "
                        "to finish the bench.")
        err.exit_code = 130
        raise err from None
    finally:
        if started_ray:
            import ray
            ray.shutdown()
    return [done[k] for k in sorted(done)], failed


def _report_only(out: Path, suite: Suite, tasks: list, plan: list["PlannedRun"], methods: list[str],
                 seeds: list[int], budget: int, unstarted: list[dict[str, Any]]) -> int:
    """Rewrite OUT's results.csv and report.md from the runs that ended; list the others."""
    from . import bench_report
    if not out.is_dir():
        raise UserError(f"--out {out} does not exist; nothing to report on.")
    rows, missing = [], []
    for run in plan:
        row = finished_row(run_dir_of(out, run.task.name, run.method, run.seed), run.method, run.seed, budget)
        if row is None:
            missing.append(f"{run.task.name}/{run.method}/seed{run.seed} not finished")
        else:
            rows.append(row)
    if not rows:
        raise UserError(f"--out {out} holds no finished run of this suite, methods and seeds at budget {budget}.")
    bench_report.write_csv(out / "results.csv", rows)
    report = bench_report.write_report(out, rows, suite=suite.name, budget=budget, methods=methods, seeds=seeds,
                                       levels={t.name: t.level for t in tasks}, left_out=missing,
                                       unstarted=unstarted)
    print(_with_loo(out, report, rows, methods, seeds))
    if missing:
        print(f"\nleft out of the report: {len(missing)} run(s): {', '.join(missing)}")
    print(f"results: {out / 'results.csv'}\nreport:  {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
