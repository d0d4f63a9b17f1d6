"""The bench harness: a real (tiny) suite run end to end, the metrics on known rows, and bad suites."""

import csv
import json
import math

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry import bench_report
from kernelfoundry.bench import main as bench_main
from kernelfoundry.bench_report import _compile_table, _per_task_table, _sol_table, compile_stats, method_metrics


def test_tiny_suite_all_methods_end_to_end(tmp_path, ray_local, monkeypatch, capsys):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    suite = tmp_path / "tiny.yaml"
    suite.write_text(f"name: tiny\nbudget: 3\ntasks:\n  - {REPO_DIR / 'experiments/tasks/relu.yaml'}\n")
    out = tmp_path / "bench"
    assert bench_main([str(suite), "--methods", "map-elites,greedy,random", "--seeds", "0", "--workers", "1",
                       "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [r["method"] for r in rows] == ["map-elites", "greedy", "random"]
    for r in rows:
        assert r["task"] == "relu" and int(r["n_candidates"]) == 3 and int(r["budget"]) == 3
        assert float(r["best_objective"]) >= float(r["seed_objective"]) > 0
        assert "h100=" in r["sol_fraction"] and float(r["qd_score"]) > 0
        assert (out / "runs" / "relu" / r["method"] / "seed0" / "run.sqlite").exists()
        ok, reached = r["compile_pass"].split("h100=")[1].split(";")[0].split("/")      # relu compiles for h100
        assert int(reached) >= 1 and 0 <= int(ok) <= int(reached)
    # the runs share verdicts: the seed kernel, verified by the first run, is read back by the others
    assert rows[0]["verdicts_cached"] == "0"
    assert int(rows[1]["verdicts_cached"]) >= 1 and int(rows[2]["verdicts_cached"]) >= 1
    assert (out / "verdicts.sqlite").exists()
    report = (out / "report.md").read_text()
    assert "| relu | 1 |" in report and "fast_1.5" in report and "## QD-score per task" in report
    assert "| map-elites | " in report.split("speed-of-light per hardware")[1]
    assert "## Compile pass rate per hardware" in report and "Compile cache:" in report
    gate_table = report.split("## Verifier seconds per gate")[1]
    assert "| correctness | " in gate_table and "| trace | " in gate_table    # seconds pooled over the runs
    assert all(r["inconclusive"] == "0" for r in rows)
    assert "Inconclusive verdicts (the verifier's own memory or time limit" in gate_table
    assert (out / "best_objective.png").stat().st_size > 0 and (out / "qd_score.png").stat().st_size > 0
    # a second invocation with the same --out resumes: finished runs are not re-evaluated
    assert bench_main([str(suite), "--methods", "greedy", "--seeds", "0", "--workers", "1",
                       "--out", str(out)]) == 0
    again = list(csv.DictReader((out / "results.csv").open()))
    assert again[0]["n_candidates"] == "3" and again[0]["best_objective"] == rows[1]["best_objective"]
    # a larger budget extends unfinished runs, but not one that stopped by itself (stop_reason)
    summary_path = out / "runs" / "relu" / "random" / "seed0" / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary_path.write_text(json.dumps({**summary, "stop_reason": "the mutator has run out of new edits"}))
    assert bench_main([str(suite), "--methods", "greedy,random", "--seeds", "0", "--workers", "1",
                       "--budget", "4", "--out", str(out)]) == 0
    extended = {r["method"]: r for r in csv.DictReader((out / "results.csv").open())}
    assert extended["greedy"]["n_candidates"] == "4" and extended["random"]["n_candidates"] == "3"
    # --report-only runs nothing: it reports the runs that ended and names the others
    (out / "report.md").unlink()
    capsys.readouterr()
    assert bench_main([str(suite), "--seeds", "0,1", "--budget", "4", "--report-only", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert ("4 run(s): relu/map-elites/seed0 not finished, relu/map-elites/seed1 not finished, "
            "relu/greedy/seed1 not finished, relu/random/seed1 not finished") in printed
    reported = {r["method"]: r for r in csv.DictReader((out / "results.csv").open())}
    assert sorted(reported) == ["greedy", "random"] and reported["greedy"]["n_candidates"] == "4"
    report = (out / "report.md").read_text()
    assert "## QD-score per task" in report and "- relu/greedy/seed1 not finished" in report
    assert "No task has finished runs for every method and seed yet" in report   # seed 1 ran nowhere
    assert not (out / "runs" / "relu" / "greedy" / "seed1").exists()
    # runs of a larger budget are not read back as a smaller one: budgets must be equal
    assert bench_main([str(suite), "--methods", "greedy", "--budget", "2", "--report-only", "--out", str(out)]) == 2
    assert "made with budget 4 and has evaluated 4 candidates, more than --budget 2" in capsys.readouterr().err
    # a task whose seed kernel fails the verifier fails its runs; the others still run and are reported
    broken = tmp_path / "broken"
    broken.mkdir()
    relu_task = (REPO_DIR / "experiments/tasks/relu.yaml").read_text()
    (broken / "relu_broken.yaml").write_text(relu_task.replace("name: relu", "name: relu_broken").replace(
        "kernels/relu_naive.py", "wrong.py"))
    (broken / "wrong.py").write_text((REPO_DIR / "experiments/tasks/kernels/relu_naive.py").read_text().replace(
        "tl.where(x > 0, x, 0.0)", "x"))
    suite.write_text(suite.read_text() + f"  - {broken / 'relu_broken.yaml'}\n")
    assert bench_main([str(suite), "--methods", "greedy", "--seeds", "0", "--workers", "1", "--budget", "4",
                       "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "relu_broken/greedy/seed0 failed: no seed kernel of task 'relu_broken' passes" in captured.err
    assert [r["task"] for r in csv.DictReader((out / "results.csv").open())] == ["relu"]
    report = (out / "report.md").read_text()
    assert "Over the 1 of 2 tasks that every method and seed finished (relu)." in report
    assert "- relu_broken/greedy/seed0 failed: no seed kernel" in report


def _row(task, method, seed, best, qd=1.0, level=1):
    return {"task": task, "level": level, "method": method, "seed": seed, "best_objective": best,
            "qd_score": qd, "coverage": 0.1, "correctness_rate": 0.5, "llm_cost_usd": 0.0, "n_candidates": 10}


def test_fast_p_geomean_and_level_scores_on_known_rows():
    rows = [_row("a", "m", 0, 0.5), _row("b", "m", 0, 1.2), _row("c", "m", 0, 3.0, level=2),
            _row("d", "m", 0, None, level=3),
            _row("a", "m", 1, 2.5), _row("b", "m", 1, 1.2), _row("c", "m", 1, 3.0, level=2),
            _row("d", "m", 1, 1.1, level=3)]
    m = method_metrics(rows, {"a": 1, "b": 1, "c": 2, "d": 3})["m"]
    assert m["seeds"] == 2
    assert m["fast_0"] == (pytest.approx(0.875), pytest.approx(0.125))       # seed 0: 3/4, seed 1: 4/4
    assert m["fast_1.5"][0] == pytest.approx((1 / 4 + 2 / 4) / 2)
    g0 = math.exp((math.log(0.5) + math.log(1.2) + math.log(3.0)) / 3)
    g1 = math.exp((math.log(2.5) + math.log(1.2) + math.log(3.0) + math.log(1.1)) / 4)
    assert m["geomean_speedup"][0] == pytest.approx((g0 + g1) / 2)
    assert m["qd_score_sum"][0] == pytest.approx(4.0)
    assert m["level1_fast_1"][0] == pytest.approx((1 / 2 + 2 / 2) / 2) and m["level1_pass"][0] == 1.0
    assert m["level3_pass"] == (pytest.approx(0.5), pytest.approx(0.5))
    # level score from pass rates: seed 0 = 0.2*1 + 0.3*1 + 0.5*0; seed 1 = 0.2*1 + 0.3*1 + 0.5*1
    assert m["level_score"][0] == pytest.approx((0.5 + 1.0) / 2)


def test_anytime_stats_reward_reaching_the_same_best_sooner():
    nan = float("nan")
    early = bench_report.anytime_stats([1.0, 4.0, 4.0, 4.0])
    late = bench_report.anytime_stats([1.0, 1.0, 1.0, 4.0])
    assert early == {"candidates_to_best": 2, "anytime_best": pytest.approx(4.0 ** 0.75, abs=1e-4)}
    assert late == {"candidates_to_best": 4, "anytime_best": pytest.approx(4.0 ** 0.25, abs=1e-4)}
    # within 1% of the final best counts as reaching it; positions before a positive objective are left out
    assert bench_report.anytime_stats([nan, 0.0, 3.97, 4.0])["candidates_to_best"] == 3
    assert bench_report.anytime_stats([nan, 0.0, 2.0, 2.0])["anytime_best"] == pytest.approx(2.0)
    assert bench_report.anytime_stats([nan, 0.0]) == {"candidates_to_best": None, "anytime_best": None}
    # the method metric: geomean over the rows that have one (unsolved or older rows have none)
    rows = [{**_row("a", "m", 0, 4.0), "anytime_best": 2.0}, {**_row("b", "m", 0, 8.0), "anytime_best": 8.0},
            {**_row("c", "m", 0, 0.0), "anytime_best": ""}]
    assert method_metrics(rows, {})["m"]["anytime_geomean"][0] == pytest.approx(4.0)
    assert method_metrics([_row("a", "m", 0, 4.0)], {})["m"]["anytime_geomean"] == (None, None)


def test_level_score_weights_only_the_levels_present():
    m = method_metrics([_row("a", "m", 0, 2.0, level=1), _row("b", "m", 0, None, level=3)], {})["m"]
    assert m["level_score"][0] == pytest.approx(0.2 / 0.7)      # levels 1 and 3: weights 0.2 + 0.5
    assert "level2_pass" not in m


def test_a_zero_speedup_is_correct_but_not_solved():
    # best objective 0: the model found no config that fits some target (perfmodel/score.py)
    rows = [_row("a", "m", 0, 0.0), _row("b", "m", 0, 4.0)]
    m = method_metrics(rows, {"a": 1, "b": 1})["m"]
    assert m["fast_0"][0] == 0.5 and m["geomean_speedup"][0] == pytest.approx(4.0)
    assert _per_task_table(rows, ["m"], {"a": 1, "b": 1})["speedup"][2] == "| a | 1 | - | 0.000 |"


def test_report_on_partial_rows_compares_methods_on_common_tasks(tmp_path, monkeypatch):
    # the bench stopped inside the level-2 task: map-elites finished it, greedy did not
    monkeypatch.setattr(bench_report, "_plot_curves", lambda out, rows: [])
    rows = [_row("a", "m", 0, 2.0, qd=5.0), _row("a", "g", 0, 1.5, qd=3.0), _row("c", "m", 0, 9.0, qd=50.0, level=2)]
    table = bench_report.write_report(tmp_path, rows, suite="s", budget=10, methods=["m", "g"], seeds=[0],
                                      levels={"a": 1, "c": 2, "d": 3}, left_out=["c/g/seed0 not finished"])
    report = (tmp_path / "report.md").read_text()
    assert "Over the 1 of 3 tasks that every method and seed finished (a)." in report
    lines = {line.split(" | ")[0]: line for line in table.splitlines()}
    assert "| m | 1.000 | 1.000 | 1.000 | 0.000 | 2.000 | 5.000 |" in lines["| m"]    # task c is not counted
    assert "level2" not in table and "- c/g/seed0 not finished" in report
    assert "| c | 2 | - | 9.000 | - |" in report                                # the per-task table shows it


def test_per_task_tables_on_known_rows():
    rows = [_row("a", "m", 0, 0.5, qd=2.0), _row("a", "m", 1, 2.0, qd=4.0), _row("a", "g", 0, None, qd=0.0),
            _row("b", "g", 0, 1.5, qd=1.5, level=2)]
    rows[0]["seed_objective"] = 0.25
    rows[1]["n_candidates"] = 20
    tables = _per_task_table(rows, ["m", "g"], {"a": 1, "b": 2})
    # best speedup: geometric mean over seeds (0.5 and 2.0 -> 1.0); a run without a correct kernel shows "-"
    assert tables["speedup"][2] == "| a | 1 | 0.250 | 1.000 | - |"
    assert tables["speedup"][3] == "| b | 2 | - | - | 1.500 |"
    # QD-score: mean over seeds, with the mean number of candidates in brackets
    assert tables["qd"][2] == "| a | 1 | 3.00 (15) | 0.00 (10) |"
    assert tables["qd"][3] == "| b | 2 | - | 1.50 (10) |"


def test_compile_table_sums_pass_rates_and_cache_hits():
    rows = [_row("a", "m", 0, 0.5), _row("b", "m", 0, 2.0), _row("a", "g", 0, None)]
    rows[0].update(compile_pass="h100=3/4;a100=2/2", compile_cache_hits=5, compile_cache_misses=3)
    rows[1].update(compile_pass="h100=1/4", compile_cache_hits=1, compile_cache_misses=1)
    rows[2].update(compile_pass="", compile_cache_hits=0, compile_cache_misses=0)
    table = _compile_table(rows, ["m", "g"])
    assert table[0] == "| method | a100 | h100 |"
    assert table[2] == "| m | 100.0% (2/2) | 50.0% (4/8) |" and table[3] == "| g | - | - |"
    assert table[-1] == "Compile cache: 6 of 10 compiles answered from the cache (60.0%)."
    assert compile_stats([[{"name": "compile", "details": {"cache_hits": 2, "cache_misses": 1, "hardware": {
        "h100": {"status": "ok"}, "a100": {"status": "error"}, "ascend910b2": {"status": "no_backend"}}}}],
        [{"name": "hack"}], None]) == {"pass": {"a100": (0, 1), "h100": (1, 1)}, "hits": 2, "misses": 1}


def test_sol_table_averages_per_method_and_hardware():
    rows = [_row("a", "m", 0, 0.5), _row("b", "m", 0, 2.0), _row("a", "g", 0, None)]
    rows[0]["sol_fraction"] = "h100=0.1;ascend910b2=0.02"
    rows[1]["sol_fraction"] = "h100=0.3"
    rows[2]["sol_fraction"] = ""
    table = _sol_table(rows, ["m", "g"])
    assert table[0] == "| method | ascend910b2 | h100 |"
    # a task that does not target a hardware does not count towards its mean; no correct kernel: "-"
    assert table[2] == "| m | 2.0% (1) | 20.0% (2) |"
    assert table[3] == "| g | - | - |"


@pytest.mark.parametrize("text, message", [
    ("name: x\n", "'tasks'"),
    ("tasks: [nope.yaml]\n", "tasks[0]"),
    (f"tasks: [{REPO_DIR / 'experiments/tasks/relu.yaml'}]\nbudget: -1\n", "'budget'"),
    (f"tasks: [{REPO_DIR / 'experiments/tasks/relu.yaml'}]\nbogus: 1\n", "bogus"),
    (f"tasks: [{REPO_DIR / 'experiments/tasks/relu.yaml'}, {REPO_DIR / 'experiments/tasks/relu.yaml'}]\n",
     "tasks named ['relu'] appear more than once"),
])
def test_bad_suites_name_the_field(tmp_path, capsys, text, message):
    suite = tmp_path / "s.yaml"
    suite.write_text(text)
    assert bench_main([str(suite), "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err


def test_bad_method_and_seeds(tmp_path, capsys):
    smoke = str(REPO_DIR / "experiments/suites/smoke.yaml")
    assert bench_main([smoke, "--methods", "map-elites,hillclimb", "--out", str(tmp_path)]) == 2
    assert "hillclimb" in capsys.readouterr().err
    assert bench_main([smoke, "--seeds", "0,x", "--out", str(tmp_path)]) == 2
    assert "--seeds" in capsys.readouterr().err
    for args, message in ((["--seeds", ","], "--seeds names no seed"),
                          (["--seeds", "1,0,1"], "--seeds names [1] more than once"),
                          (["--methods", "greedy,random,greedy"], "--methods names ['greedy'] more than once"),
                          (["--budget", "0"], "--budget must be at least 1")):
        assert bench_main([smoke, *args, "--out", str(tmp_path)]) == 2
        assert message in capsys.readouterr().err
    assert bench_main([smoke, "--report-only", "--out", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert bench_main([smoke, "--report-only", "--out", str(tmp_path)]) == 2
    assert "no finished run" in capsys.readouterr().err


def test_leave_one_out_memory_runs_each_task_cold_then_with_the_others_memory(tmp_path, ray_local, capsys):
    relu = (REPO_DIR / "experiments/tasks/relu.yaml").read_text()
    relu = relu.replace("kernels/relu_naive.py", str(REPO_DIR / "experiments/tasks/kernels/relu_naive.py"))
    (tmp_path / "relu.yaml").write_text(relu)
    twin_seed = tmp_path / "relu_twin_seed.py"          # the same kernel in other words: a different source
    twin_seed.write_text((REPO_DIR / "experiments/tasks/kernels/relu_naive.py").read_text() + "\n# the twin\n")
    (tmp_path / "relu_twin.yaml").write_text(relu.replace("name: relu", "name: relu_twin").replace(
        str(REPO_DIR / "experiments/tasks/kernels/relu_naive.py"), str(twin_seed)))
    suite = tmp_path / "pair.yaml"
    suite.write_text("name: pair\nbudget: 3\ntasks: [relu.yaml, relu_twin.yaml]\n")
    out = tmp_path / "bench"
    assert bench_main([str(suite), "--methods", "greedy", "--seeds", "0", "--workers", "1", "--memory-mode", "loo",
                       "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [(r["task"], r["method"]) for r in rows] == [("relu", "greedy"), ("relu_twin", "greedy"),
                                                        ("relu", "greedy+memory"), ("relu_twin", "greedy+memory")]
    assert all(1 <= int(r["candidates_to_best"]) <= 3 and float(r["anytime_best"]) > 0 for r in rows)
    runs = out / "runs"
    cold = json.loads((runs / "relu" / "greedy" / "seed0" / "summary.json").read_text())["memory"]
    assert cold["read"] is False and cold["experiences_written"] == 3 and cold["cold_start_seeds"] == []
    for task, other in (("relu", "relu_twin"), ("relu_twin", "relu")):
        warm = json.loads((runs / task / "greedy+memory" / "seed0" / "summary.json").read_text())["memory"]
        assert warm["read"] is True and warm["cold_start_seeds"]              # the twin's elites, never its own
        assert all(s.startswith(f"memory:{other}#") for s in warm["cold_start_seeds"])
    from kernelfoundry.memory import ExperienceStore
    for task, other in (("relu", "relu_twin"), ("relu_twin", "relu")):
        # the copy a memory run used knows the task only from that run itself (never from its cold run)
        own_run = str((runs / task / "greedy+memory" / "seed0").resolve())
        with ExperienceStore(out / "memory" / f"seed0-without-{task}.sqlite") as copy:
            assert {e["run"] for e in copy.iter_experiences() if e["task"] == task} == {own_run}
            assert {e["run"] for e in copy.iter_elites() if e["task"] == task} == {own_run}
            assert any(e["task"] == other for e in copy.iter_elites())
    report = (out / "report.md").read_text()
    assert "## Leave-one-out memory test" in report and "| greedy | 0 |" in report
    assert bench_main([str(suite), "--methods", "greedy", "--seeds", "0", "--memory-mode", "loo", "--report-only",
                       "--out", str(out)]) == 0
    assert "Leave-one-out" in capsys.readouterr().out


def test_leave_one_out_verdict_ties_differences_below_half_a_percent():
    from kernelfoundry.bench import _compare
    assert _compare(25.040, 25.039) == "tie"          # the same kernels found in another order
    assert _compare(80.33, 76.50) == "win" and _compare(78.59, 80.40) == "loss"
    assert _compare(0.0, 0.0) == "tie"


def test_inconclusive_verdicts_are_counted_in_all_and_named_per_run():
    rows = [{"task": "a", "method": "greedy", "seed": 0, "n_candidates": 12, "inconclusive": 2},
            {"task": "b", "method": "greedy", "seed": 0, "n_candidates": 10, "inconclusive": "0"},
            {"task": "c", "method": "greedy", "seed": 1, "n_candidates": 5}]      # a results.csv from before
    lines = bench_report._inconclusive_lines(rows)
    assert lines[0].endswith(": 2 of 27 candidates.") and lines[1:] == ["- a / greedy / seed 0: 2"]


@pytest.mark.parametrize("name", ["smoke", "full", "related", "kernelbench_level1_sample"])
def test_every_shipped_suite_loads_and_names_existing_files(name):
    from kernelfoundry.bench import load_suite
    path = REPO_DIR / "experiments" / "suites" / f"{name}.yaml"
    if name.startswith("kernelbench") and not (REPO_DIR.parent / "shared" / "kernelbench").is_dir():
        pytest.skip(f"KernelBench problems not found at {REPO_DIR.parent / 'shared' / 'kernelbench'}")
    suite = load_suite(path)
    assert suite.tasks and all(p.is_file() for p in suite.tasks)
    if name == "kernelbench_level1_sample":
        assert len(suite.tasks) == 20 == len(set(suite.tasks)) and suite.budget == 12


def test_a_run_whose_seeds_all_failed_starts_again_instead_of_replaying_its_verdicts(tmp_path, monkeypatch):
    """Resuming would replay the stored seed verdicts, which a verifier fixed since may no longer give;
    the old run is kept beside the new one."""
    import json

    from kernelfoundry import bench
    from kernelfoundry.search import session
    from kernelfoundry.search.rundir import STORE_NAME, SUMMARY_NAME
    run_dir = tmp_path / "runs" / "t" / "map-elites" / "seed0"
    run_dir.mkdir(parents=True)
    (run_dir / STORE_NAME).write_bytes(b"")
    (run_dir / SUMMARY_NAME).write_text(json.dumps({"n_candidates": 1, "n_correct": 0, "budget": 12}))
    assert bench._never_started(run_dir)
    seen = {}

    def fake_run(cfg, stop=None):
        seen["resume"], seen["out"] = cfg.resume, cfg.out
        raise RuntimeError("stop here")
    monkeypatch.setattr(session, "run_evolution", fake_run)
    with pytest.raises(RuntimeError, match="stop here"):
        bench.run_one(tmp_path / "t.yaml", "map-elites", 0, budget=12, workers=1, models=[], run_dir=run_dir)
    assert seen == {"resume": None, "out": run_dir}
    kept = list(run_dir.parent.glob("seed0.no-start-*"))
    assert len(kept) == 1 and (kept[0] / SUMMARY_NAME).exists()
    # a run with a correct kernel, or one stopped before its summary, resumes as before
    (run_dir).mkdir()
    (run_dir / STORE_NAME).write_bytes(b"")
    assert not bench._never_started(run_dir)
    (run_dir / SUMMARY_NAME).write_text(json.dumps({"n_candidates": 3, "n_correct": 1, "budget": 12}))
    assert not bench._never_started(run_dir)
