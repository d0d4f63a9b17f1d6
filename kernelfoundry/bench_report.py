"""Benchmark metrics and report: results.csv rows, fast_p, geomean speedup, QD-score, level scores, plots."""

from __future__ import annotations

import csv
import math
import warnings
from collections import defaultdict
from pathlib import Path
from statistics import mean, pstdev
from typing import Any

FAST_P = (0.0, 1.0, 1.5, 2.0)
LEVEL_WEIGHTS = {1: 0.2, 2: 0.3, 3: 0.5}
CSV_FIELDS = ("task", "level", "method", "seed", "budget", "n_candidates", "n_correct", "correctness_rate",
              "best_objective", "seed_objective", "sol_fraction", "qd_score", "coverage", "num_elites", "llm_cost_usd",
              "verdicts_cached", "inconclusive", "compile_pass", "compile_cache_hits", "compile_cache_misses", "candidates_to_best",
              "anytime_best", "seconds", "run_dir")
NEAR_BEST = 0.99        # candidates_to_best: the first candidate within 1% of the run's best


def row_from_run(run_dir: Path, *, method: str, seed: int, summary: dict[str, Any], seconds: float) -> dict[str, Any]:
    """One results.csv row from a finished run."""
    from .search import open_run, progress_curves
    run = open_run(run_dir)
    try:
        anytime = anytime_stats(progress_curves(run.store, run.archive.spec).best)
        sol = {}
        if summary.get("best_candidate_id") is not None:
            best = run.store.get_candidate(summary["best_candidate_id"])
            sol = {hw: round(float(s.get("sol_fraction", 0.0)), 4) for hw, s in (best.hardware or {}).items()}
        seed_objectives = [r.objective for r in run.store.iter_candidates(passed_only=True,
                                                                          columns="id, mutator, objective")
                           if r.mutator == "seed" and r.objective is not None]
        compiled = compile_stats(r.gates for r in run.store.iter_candidates(columns="id, gates"))
        level = run.task.level
    finally:
        run.close()
    n = summary["n_candidates"]
    return {"task": summary["task"], "level": level, "method": method, "seed": seed, "budget": summary["budget"],
            "n_candidates": n, "n_correct": summary["n_correct"],
            "correctness_rate": round(summary["n_correct"] / n, 4) if n else 0.0,
            "best_objective": summary["best_objective"],
            "seed_objective": max(seed_objectives) if seed_objectives else None,
            "sol_fraction": ";".join(f"{k}={v}" for k, v in sol.items()),
            "qd_score": round(summary["qd_score"], 4), "coverage": round(summary["coverage"], 4),
            "num_elites": summary["num_elites"], "llm_cost_usd": summary["llm"]["cost_usd"],
            "verdicts_cached": summary.get("verdicts_cached", 0), "inconclusive": summary.get("inconclusive", 0),
            "compile_pass": ";".join(f"{hw}={ok}/{n}" for hw, (ok, n) in compiled["pass"].items()),
            "compile_cache_hits": compiled["hits"], "compile_cache_misses": compiled["misses"],
            **anytime, "seconds": round(seconds, 1), "run_dir": str(run_dir)}


def anytime_stats(best_so_far: list[float]) -> dict[str, Any]:
    """How soon a run got its result, from its best-so-far objective after each candidate.

    ``candidates_to_best``: the first candidate within 1% of the run's final best.
    ``anytime_best``: the geometric mean of the best-so-far over the candidates, i.e. the
    run's speedup averaged over its whole budget (in log space), so of two runs that end at
    the same best the one that got there sooner scores higher.  Positions before the first
    kernel with a positive objective are left out (seed kernels come first, so rarely any).
    Both are None when no candidate has a positive objective.
    """
    logs = [math.log(b) for b in best_so_far if b == b and b > 0]
    if not logs:
        return {"candidates_to_best": None, "anytime_best": None}
    final = max(b for b in best_so_far if b == b)
    first = next(i for i, b in enumerate(best_so_far, 1) if b == b and b >= NEAR_BEST * final)
    return {"candidates_to_best": first, "anytime_best": round(math.exp(mean(logs)), 4)}


def compile_stats(gate_lists) -> dict[str, Any]:
    """Per hardware with a backend, (candidates whose configs compiled there, candidates that reached the
    compile gate), and the compile cache's hits and misses, from the candidates' stored gates."""
    passes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    hits = misses = 0
    for gates in gate_lists:
        gate = next((g for g in gates or [] if g.get("name") == "compile"), None)
        if gate is None:
            continue
        details = gate.get("details") or {}
        hits += int(details.get("cache_hits", 0))
        misses += int(details.get("cache_misses", 0))
        for hw, entry in (details.get("hardware") or {}).items():
            if entry.get("status") in ("ok", "partial", "error"):
                passes[hw][1] += 1
                passes[hw][0] += entry["status"] != "error"
    return {"pass": {hw: tuple(v) for hw, v in sorted(passes.items())}, "hits": hits, "misses": misses}


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: r.get(k) for k in CSV_FIELDS})
    tmp.replace(path)


def _speedup(row: dict[str, Any]) -> float | None:
    b = row.get("best_objective")
    return None if b in (None, "") else float(b)


def _solved(speedup: float | None) -> bool:
    """A correct kernel with a positive predicted speedup.

    A best objective of 0 means the model found no config of the kernel that runs on
    some target hardware or shape (``perfmodel/score.py``): correct, but no solution there.
    """
    return speedup is not None and speedup > 0


def comparable_tasks(rows: list[dict[str, Any]], methods: list[str], seeds: list[int]) -> list[str]:
    """Tasks (in row order) with a row for every method and seed: the method table compares on these."""
    have = {(r["task"], r["method"], int(r["seed"])) for r in rows}
    tasks = dict.fromkeys(r["task"] for r in rows)
    return [t for t in tasks if all((t, m, s) in have for m in methods for s in seeds)]


def method_metrics(rows: list[dict[str, Any]], levels: dict[str, int],
                   unstarted: list[dict[str, Any]] = ()) -> dict[str, dict[str, Any]]:
    """Per method: fast_p, geomean speedup, summed QD-score, ... (mean and sd over seeds).

    Compare methods only on rows of the same tasks (see :func:`comparable_tasks`): sums and
    shares are taken over the rows given.  *unstarted* problems (no starting kernel, so no
    run) count as unsolved in fast_p and the level pass rates, as KernelBench counts them.
    """
    by_method_seed: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by_method_seed[r["method"]][int(r["seed"])].append(r)
    level_set = sorted({_level(r, levels) for r in rows} | {int(u["level"]) for u in unstarted})
    out = {}
    for method, per_seed in by_method_seed.items():
        per_seed_metrics = [_suite_metrics(rs, levels, level_set, unstarted) for rs in per_seed.values()]
        agg: dict[str, Any] = {"seeds": len(per_seed_metrics)}
        for key in dict.fromkeys(k for m in per_seed_metrics for k in m):
            values = [m[key] for m in per_seed_metrics if m.get(key) is not None]
            agg[key] = (mean(values), pstdev(values)) if values else (None, None)
        out[method] = agg
    return out


def _level(row: dict[str, Any], levels: dict[str, int]) -> int:
    return int(levels.get(row["task"], row["level"]))


def _suite_metrics(rows: list[dict[str, Any]], levels: dict[str, int], level_set: list[int],
                   unstarted: list[dict[str, Any]] = ()) -> dict[str, Any]:
    n = len(rows) + len(unstarted)
    speedups = [_speedup(r) for r in rows]
    m: dict[str, Any] = {}
    for p in FAST_P:
        m[f"fast_{p:g}"] = sum(1 for s in speedups if _solved(s) and s > p) / n
    solved = [s for s in speedups if _solved(s)]
    m["geomean_speedup"] = math.exp(mean(math.log(s) for s in solved)) if solved else None
    m["qd_score_sum"] = sum(float(r["qd_score"]) for r in rows)
    anytime = [float(a) for r in rows if (a := r.get("anytime_best")) not in (None, "") and float(a) > 0]
    m["anytime_geomean"] = math.exp(mean(map(math.log, anytime))) if anytime else None    # solved tasks, as above
    m["coverage_mean"] = mean(float(r["coverage"]) for r in rows)
    m["correctness_rate"] = mean(float(r["correctness_rate"]) for r in rows)
    m["candidates_mean"] = mean(float(r["n_candidates"]) for r in rows)
    m["llm_cost_usd"] = sum(float(r["llm_cost_usd"] or 0) for r in rows)
    by_level: dict[int, list[float | None]] = defaultdict(list)
    for r, s in zip(rows, speedups):
        by_level[_level(r, levels)].append(s)
    for u in unstarted:
        by_level[int(u["level"])].append(None)
    for level in level_set:
        got = by_level.get(level)
        m[f"level{level}_pass"] = sum(1 for s in got if _solved(s)) / len(got) if got else None
        m[f"level{level}_fast_1"] = sum(1 for s in got if _solved(s) and s > 1) / len(got) if got else None
    if 3 in level_set:
        present = [lv for lv in (1, 2, 3) if m.get(f"level{lv}_pass") is not None]
        weight = sum(LEVEL_WEIGHTS[lv] for lv in present)
        m["level_score"] = sum(LEVEL_WEIGHTS[lv] * m[f"level{lv}_pass"] for lv in present) / weight
    return m


def _fmt(pair: tuple[float | None, float | None], digits: int = 3) -> str:
    v, sd = pair
    if v is None:
        return "-"
    return f"{v:.{digits}f}" if not sd else f"{v:.{digits}f} ± {sd:.{digits}f}"


def write_report(out: Path, rows: list[dict[str, Any]], *, suite: str, budget: int, methods: list[str],
                 seeds: list[int], levels: dict[str, int], left_out: list[str] = (),
                 unstarted: list[dict[str, Any]] = ()) -> str:
    """Write OUT/report.md and the plots; returns the method table (also printed by the command).

    The method table and the curves compare methods on the tasks every method and seed
    finished; the per-task tables show every row.  *left_out* names runs without a row;
    *unstarted* the problems without a starting kernel (``bench.load_suite_tasks``).
    """
    methods = [m for m in methods if any(r["method"] == m for r in rows)]
    common = comparable_tasks(rows, methods, seeds)
    compared = [r for r in rows if r["task"] in common]
    all_tasks = list(dict.fromkeys([*levels, *(r["task"] for r in rows)]))
    if compared:
        metrics = method_metrics(compared, levels, unstarted)
        keys = list(dict.fromkeys(k for agg in metrics.values() for k in agg if k != "seeds"))
        table = ["| method | " + " | ".join(keys) + " |", "|" + "---|" * (len(keys) + 1)]
        for method in methods:
            table.append(f"| {method} | " + " | ".join(_fmt(metrics[method].get(k, (None, None))) for k in keys)
                         + " |")
        plots = _plot_curves(out, compared)
    else:
        table = ["No task has finished runs for every method and seed yet; the per-task tables below show "
                 "the runs that did finish."]
        plots = []
    scope = (f"all {len(common)} tasks" if len(common) == len(all_tasks)
             else f"the {len(common)} of {len(all_tasks)} tasks that every method and seed finished "
                  f"({', '.join(common) or 'none'})")
    if unstarted:
        scope += (f", and the {len(unstarted)} problems without a starting kernel, counted as unsolved in "
                  "fast_p and the pass rates")
    per_task = _per_task_table(rows, methods, levels)
    sol = _sol_table(rows, methods)
    compiled = _compile_table(rows, methods)
    text = "\n".join([
        f"# Benchmark: suite {suite}", "",
        f"Budget {budget} candidates per run; methods {', '.join(methods)}; seeds {seeds}; {len(rows)} runs. "
        "Values are mean ± sd over seeds.",
        "fast_p: share of tasks with a correct kernel whose speedup over the eager-PyTorch estimate exceeds p "
        "(KernelBench). level*_pass: share of a level's tasks with a correct kernel; level*_fast_1: with "
        "speedup > 1; level_score weights the levels' pass rates 0.2/0.3/0.5 (NPUKernelBench) when level 3 "
        "exists.", "",
        "## Methods", "", f"Over {scope}.", "", *table, "",
        "## Best speedup per task (geometric mean over seeds; `seed`: the task's best seed kernel)", "",
        "Speedups are predicted: the kernel's and the eager baseline's latencies both come from the "
        "performance model.  Its measured error on published timings, per task (docs/fidelity.md):", "",
        *_model_error_table(rows), "",
        *per_task["speedup"], "",
        "## QD-score per task (mean over seeds; in brackets: candidates evaluated, mean over seeds)", "",
        *per_task["qd"], "",
        "## Fraction of speed-of-light per hardware (best kernel of each run; mean over the runs whose task "
        "targets that hardware, their number in brackets)", "",
        *sol, "",
        "## Compile pass rate per hardware (candidates whose best configs compile with Triton for that GPU, "
        "of those that reached the compile gate; summed over seeds)", "",
        *compiled, "",
        "## Verifier seconds per gate (every candidate of every run that reached the gate)", "",
        *_gate_seconds_table(rows), "",
        *_inconclusive_lines(rows), "",
        *(["## Runs left out", "", *[f"- {r}" for r in left_out], ""] if left_out else []),
        *_unstarted_section(unstarted),
        "## Curves", "", *[f"![{p.stem}]({p.name})" for p in plots], ""])
    (out / "report.md").write_text(text)
    return "\n".join(table)


def _unstarted_section(unstarted: list[dict[str, Any]]) -> list[str]:
    """Problems without a starting kernel, counted by category per level, then each with its reason."""
    if not unstarted:
        return []
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for u in unstarted:
        counts[(u["category"], int(u["level"]))] += 1
    lines = ["## Problems without a starting kernel", "",
             "No template for an op and no LLM to draft one (`--model`), or an import that failed "
             "(docs/kernelbench.md). They have no run and count as unsolved.", "",
             "| why | level | problems |", "|---|---|---|"]
    lines += [f"| {cat} | {level} | {k} |" for (cat, level), k in sorted(counts.items(), key=lambda kv: -kv[1])]
    lines += ["", *[f"- {u['task']} (level {u['level']}): {u['reason']}" for u in unstarted], ""]
    return lines


def _model_error_table(rows: list[dict[str, Any]]) -> list[str]:
    """Task, op kind and the model's measured error band on the task's first hardware."""
    from .fidelity import band_note, op_kind
    from .search import open_run
    lines = ["| task | op kind | hardware | model error |", "|---|---|---|---|"]
    for task_name, run_dir in dict((r["task"], r.get("run_dir")) for r in rows).items():
        try:
            run = open_run(run_dir)
            try:
                hardware = list(run.config.get("hardware") or run.task.hardware)[0]
                kind = op_kind(run.task)
            finally:
                run.close()
        except Exception:  # noqa: BLE001 - a run directory that moved or cannot be read: no band
            continue
        lines.append(f"| {task_name} | {kind} | {hardware} | {band_note(kind, hardware).removeprefix('predicted; ')} |")
    return lines


def _per_task_table(rows: list[dict[str, Any]], methods: list[str], levels: dict[str, int]
                    ) -> dict[str, list[str]]:
    """Markdown tables task x method: best speedup (geomean over seeds) and QD-score (mean over seeds)."""
    best: dict[tuple[str, str], list[float]] = defaultdict(list)
    qd: dict[tuple[str, str], list[float]] = defaultdict(list)
    cands: dict[tuple[str, str], list[float]] = defaultdict(list)
    seed_objective: dict[str, float] = {}
    for r in rows:
        key = (r["task"], r["method"])
        s = _speedup(r)
        if s is not None:
            best[key].append(s)      # 0 (correct, no config fits a target) shows as 0.000
        qd[key].append(float(r["qd_score"] or 0.0))
        cands[key].append(float(r["n_candidates"] or 0))
        if r.get("seed_objective") not in (None, ""):
            seed_objective[r["task"]] = float(r["seed_objective"])
    head = "|---|---|" + "---|" * len(methods)
    speed = ["| task | level | seed | " + " | ".join(methods) + " |", head + "---|"]
    qd_rows = ["| task | level | " + " | ".join(methods) + " |", head]
    for task in dict.fromkeys(r["task"] for r in rows):
        cells = [f"{seed_objective[task]:.3f}" if task in seed_objective else "-"]
        qd_cells = []
        for method in methods:
            vals = best.get((task, method))
            cells.append("-" if not vals else f"{_geomean_or_zero(vals):.3f}")
            q = qd.get((task, method))
            qd_cells.append(f"{mean(q):.2f} ({mean(cands[(task, method)]):.0f})" if q else "-")
        speed.append(f"| {task} | {levels.get(task, '')} | " + " | ".join(cells) + " |")
        qd_rows.append(f"| {task} | {levels.get(task, '')} | " + " | ".join(qd_cells) + " |")
    return {"speedup": speed, "qd": qd_rows}


def _geomean_or_zero(values: list[float]) -> float:
    """Geometric mean; 0 when any value is 0 (its limit)."""
    return 0.0 if min(values) <= 0 else math.exp(mean(map(math.log, values)))


def _parse_sol(text: str | None) -> dict[str, float]:
    """``"h100=0.14;ascend910b2=0.005"`` (results.csv) -> {hardware: fraction}."""
    out = {}
    for part in (text or "").split(";"):
        name, sep, value = part.partition("=")
        if sep:
            out[name.strip()] = float(value)
    return out


def _compile_table(rows: list[dict[str, Any]], methods: list[str]) -> list[str]:
    """Markdown table method x hardware: compile pass rate, and the compile cache's hit rate."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    hits = misses = 0
    for r in rows:
        for part in (r.get("compile_pass") or "").split(";"):
            hw, sep, frac = part.partition("=")
            if sep and "/" in frac:
                ok, n = frac.split("/")
                counts[(r["method"], hw)][0] += int(ok)
                counts[(r["method"], hw)][1] += int(n)
        hits += int(r.get("compile_cache_hits") or 0)
        misses += int(r.get("compile_cache_misses") or 0)
    hardware = sorted({hw for _, hw in counts})
    if not hardware:
        return ["No candidate reached the compile gate (no GPU with a Triton backend in the runs' hardware)."]
    table = ["| method | " + " | ".join(hardware) + " |", "|---|" + "---:|" * len(hardware)]
    for method in methods:
        cells = [f"{100 * c[0] / c[1]:.1f}% ({c[0]}/{c[1]})" if (c := counts.get((method, hw))) and c[1] else "-"
                 for hw in hardware]
        table.append(f"| {method} | " + " | ".join(cells) + " |")
    total = hits + misses
    table += ["", f"Compile cache: {hits} of {total} compiles answered from the cache "
                  f"({100 * hits / total:.1f}%)." if total else "Compile cache: no compiles."]
    return table


def _gate_seconds_table(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown table gate -> candidates, median, p90 and total seconds, pooled over the runs' stores."""
    from .search import STORE_NAME, RunStats
    from .store import RunStore
    pooled = RunStats()
    for r in rows:
        path = Path(str(r.get("run_dir") or "")) / STORE_NAME
        if not path.is_file():
            continue
        with RunStore(path, create=False) as store:
            for cand in store.iter_candidates(columns="id, gates"):
                pooled.note(cid=cand.id, passed=False, gate=None, objective=None, mutator="", usage=None,
                            gates=cand.gates)
    summary = pooled.gate_seconds_summary()
    if not summary:
        return ["No verified candidates."]
    table = ["| gate | candidates | median s | p90 s | total s |", "|---|---:|---:|---:|---:|"]
    table += [f"| {name} | {v['n']} | {v['median']:.2f} | {v['p90']:.2f} | {v['total']:.0f} |"
              for name, v in summary.items()]
    return table


def _inconclusive_lines(rows: list[dict[str, Any]]) -> list[str]:
    """How many verdicts the verifier's own memory or time limits decided, in all and per run."""
    hit = [r for r in rows if int(r.get("inconclusive") or 0)]
    total = sum(int(r.get("inconclusive") or 0) for r in rows)
    n = sum(int(r.get("n_candidates") or 0) for r in rows)
    lines = [f"Inconclusive verdicts (the verifier's own memory or time limit; not charged to the kernel or its "
             f"operator): {total} of {n} candidates."]
    return lines + [f"- {r['task']} / {r['method']} / seed {r['seed']}: {r['inconclusive']}" for r in hit]


def _sol_table(rows: list[dict[str, Any]], methods: list[str]) -> list[str]:
    """Markdown table method x hardware: mean speed-of-light fraction of the runs' best kernels."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        for hw, frac in _parse_sol(r.get("sol_fraction")).items():
            values[(r["method"], hw)].append(frac)
    hardware = sorted({hw for _, hw in values})
    table = ["| method | " + " | ".join(hardware) + " |", "|---|" + "---:|" * len(hardware)]
    for method in methods:
        cells = [f"{100 * mean(v):.1f}% ({len(v)})" if (v := values.get((method, hw))) else "-" for hw in hardware]
        table.append(f"| {method} | " + " | ".join(cells) + " |")
    return table


def _plot_curves(out: Path, rows: list[dict[str, Any]]) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from .search import open_run, progress_curves
    best_logs: dict[str, list[np.ndarray]] = defaultdict(list)
    qd: dict[str, list[np.ndarray]] = defaultdict(list)
    curves = []
    for r in rows:
        run = open_run(r["run_dir"])
        try:
            curves.append((r, progress_curves(run.store, run.archive.spec)))
        finally:
            run.close()
    length = max(1, max(len(c.n) for _, c in curves))
    for r, c in curves:
        best = np.array(c.best, dtype=float)
        # not solved yet (no correct kernel, or best 0): left out of the geomean, as in the table
        logs = np.full(len(best), np.nan)
        np.log(best, out=logs, where=np.nan_to_num(best, nan=0.0) > 0)
        best_logs[(r["method"], r["seed"])].append(_pad_to(logs, length, empty=np.nan))
        qd[(r["method"], r["seed"])].append(_pad_to(np.array(c.qd_score, dtype=float), length, empty=0.0))
    paths = []
    for name, data, combine, ylabel in (
            ("best_objective", best_logs, _exp_nanmean, "geomean best speedup over solved tasks"),
            ("qd_score", qd, lambda a: np.sum(a, axis=0), "QD-score summed over tasks")):
        fig, ax = plt.subplots(figsize=(7, 4))
        per_method: dict[str, list[np.ndarray]] = defaultdict(list)
        for (method, _seed), arrays in data.items():
            per_method[method].append(combine(np.array(arrays)))
        for method, lines in per_method.items():
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)      # an index where no seed solved anything
                ax.plot(np.arange(1, length + 1), np.nanmean(lines, axis=0), label=method)
        ax.set_xlabel("candidates evaluated per task")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out / f"{name}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    return paths


def _pad_to(values, length: int, *, empty: float):
    """*values* extended to *length* with its last value (*empty* when it has none)."""
    import numpy as np
    if len(values) == 0:
        return np.full(length, empty)
    return np.pad(values, (0, length - len(values)), mode="edge")


def _exp_nanmean(logs):
    """exp of the mean over tasks of each column, ignoring tasks not solved yet (NaN)."""
    import numpy as np
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)              # a column where no task is solved: NaN
        return np.exp(np.nanmean(logs, axis=0))
