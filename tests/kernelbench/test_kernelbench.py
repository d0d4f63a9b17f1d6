"""KernelBench problems in, KernelBench solutions out: import (sandboxed), generated seeds, refusals
with reasons, the task-import command, directories as suites, ModelNew modules and the CPU contract."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.errors import TaskError, UserError

PROBLEMS = REPO_DIR / "experiments" / "kernelbench"
FILES = {p.stem: p for p in sorted(PROBLEMS.glob("level*/*.py"))}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    old = os.environ.get("KERNELFOUNDRY_KB_CACHE")
    path = tmp_path_factory.mktemp("kbcache")
    os.environ["KERNELFOUNDRY_KB_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("KERNELFOUNDRY_KB_CACHE", None)
    else:
        os.environ["KERNELFOUNDRY_KB_CACHE"] = old


@pytest.fixture(scope="module")
def tasks(cache):
    """The five test problems, imported once (a sandboxed job each)."""
    from kernelfoundry.kernelbench import load_task_or_problem
    return {name: load_task_or_problem(path) for name, path in FILES.items()}


def test_the_five_problems_import_with_their_traits(tasks):
    assert set(tasks) == {"1_Swish_Scaled", "2_Softmax_Rows", "3_LayerNorm_Affine", "4_Mean_Middle_Dim",
                          "1_Linear_Tanh_Scale"}
    ln = tasks["3_LayerNorm_Affine"]
    assert ln.level == 1 and ln.input_names == ("x", "norm_weight", "norm_bias")
    shapes = {s.name: s.shape for s in ln.inputs}
    assert shapes["norm_weight"] == shapes["x"][1:] == shapes["norm_bias"]      # weights share x's dims
    assert ln.target_shapes[0] == {"x_0": 64, "x_1": 96, "x_2": 1001}
    lin = tasks["1_Linear_Tanh_Scale"]
    assert lin.level == 2 and [s.shape for s in lin.inputs] == [("x_0", "x_1"), ("fc_weight_0", "x_1"),
                                                               ("fc_weight_0",)]
    mean = tasks["4_Mean_Middle_Dim"]
    for env in mean.check_shapes:                  # 777 and 2049: odd, not multiples of 16, small
        assert env["x_1"] % 2 == 1 and env["x_1"] % 16 and env["x_2"] % 2 == 1 and env["x_2"] % 16
        assert env["x_0"] * env["x_1"] * env["x_2"] <= 40_000
    assert all(t.atol == t.rtol == 1e-2 and t.seeds[0].is_file() for t in tasks.values())


def test_generated_seeds_are_correct_at_the_check_shapes(tasks):
    from kernelfoundry.evaluate.inprocess import check_trusted
    for name, task in tasks.items():
        source = task.seeds[0].read_text()
        assert "torch." not in source.split("def launch", 1)[0].split("import triton", 1)[1]  # kernels: no torch
        gate = check_trusted(source, task, profiles=("normal", "large"))
        assert gate.passed, f"{name}: {gate.reason}"


def _modelnew(task, tmp_path, kernel_text=None):
    from kernelfoundry.candidate import default_config, parse_param_space
    from kernelfoundry.kernelbench.export_kb import modelnew_source
    source = kernel_text or task.seeds[0].read_text()
    params = default_config(parse_param_space(source))
    path = tmp_path / f"{task.name}_new.py"
    path.write_text(modelnew_source(task, source, params, list(params)))
    return path


@pytest.mark.parametrize("name", ["3_LayerNorm_Affine"])     # the Linear one: in the export test below
def test_modelnew_of_a_verified_seed_passes_the_kernelbench_contract(tasks, tmp_path, name):
    from kernelfoundry.kernelbench.contract import check_contract
    result = check_contract(_modelnew(tasks[name], tmp_path), FILES[name])
    assert result["ok"], result["reason"]
    assert result["max_abs_err"] < 1e-3 and result["shapes"][0] != list(tasks[name].target_shapes[0].values())


def test_the_contract_catches_a_wrong_kernel(tasks, tmp_path):
    from kernelfoundry.kernelbench.contract import check_contract
    task = tasks["1_Swish_Scaled"]
    wrong = task.seeds[0].read_text().replace("tl.store(out0 + offs, (", "tl.store(out0 + offs, 1.5 * (")
    assert wrong != task.seeds[0].read_text()
    result = check_contract(_modelnew(task, tmp_path, wrong), FILES["1_Swish_Scaled"])
    assert not result["ok"] and "differ" in result["reason"]


@pytest.mark.parametrize("body, reason", [
    ("class Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
     "def get_init_inputs():\n    return []\n", "defines no `get_inputs`"),
    ("class Model(torch.nn.Module):\n    def forward(self, x):\n        return x[x > 0]\n"
     "def get_inputs():\n    return [torch.randn(64, 64)]\ndef get_init_inputs():\n    return []\n",
     "data-dependent"),
    ("class Model(torch.nn.Module):\n    def __init__(self, w):\n        super().__init__()\n"
     "    def forward(self, x):\n        return x\n"
     "def get_inputs():\n    return [torch.randn(64, 64)]\ndef get_init_inputs():\n    return [torch.ones(3)]\n",
     "get_init_inputs()[0] is a tensor"),
])
def test_problems_that_cannot_be_imported_say_why(cache, tmp_path, body, reason):
    from kernelfoundry.kernelbench import load_task_or_problem as load_task
    path = tmp_path / "level2" / "bad_problem.py"
    path.parent.mkdir()
    path.write_text("import torch\n" + body)
    with pytest.raises(TaskError) as exc:
        load_task(path)
    assert str(path) in str(exc.value) and reason in str(exc.value)


def test_task_import_writes_a_reviewable_task_file(cache, tmp_path, capsys):
    from kernelfoundry.kernelbench.cli import main
    from kernelfoundry.task import load_task
    out = tmp_path / "softmax.yaml"
    assert main(["import", str(FILES["2_Softmax_Rows"]), "--out", str(out)]) == 0
    task = load_task(out)
    assert task.name == "2_Softmax_Rows" and task.seeds[0] == tmp_path / "softmax_seed.py"
    assert "def reference(x)" in task.reference and "generated" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "missing.py")]) == 2
    assert "missing.py does not exist" in capsys.readouterr().err


def test_the_old_task_command_says_where_it_went(capsys):
    from kernelfoundry.task import main
    assert main(["import", "x.py"]) == 2
    assert "kernelfoundry task import" in capsys.readouterr().err


def test_a_directory_of_problems_is_a_suite_and_seed_kernel_needs_a_problem(tmp_path, capsys):
    from kernelfoundry.bench import load_suite
    from kernelfoundry.evolve import main as evolve_main
    suite = load_suite(PROBLEMS)
    assert suite.name == "kernelbench" and [p.name for p in suite.tasks] == [
        "1_Swish_Scaled.py", "2_Softmax_Rows.py", "3_LayerNorm_Affine.py", "4_Mean_Middle_Dim.py",
        "1_Linear_Tanh_Scale.py"]
    with pytest.raises(UserError, match="holds no KernelBench problem file"):
        load_suite(tmp_path)
    task = REPO_DIR / "experiments/tasks/relu.yaml"
    assert evolve_main([str(task), "--seed-kernel", str(task), "--out", str(tmp_path / "run")]) == 2
    assert "--seed-kernel goes with a KernelBench problem file" in capsys.readouterr().err


def test_fidelity_generator_smoke(tmp_path):
    env = dict(os.environ, KERNELFOUNDRY_KB_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=str(REPO_DIR) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    data = "/work/shared/fidelity/kernelbench_h100.yaml"
    if not os.path.isfile(data):
        pytest.skip(f"{data} is not on this machine")
    proc = subprocess.run([sys.executable, str(REPO_DIR / "experiments/kernelbench_from_fidelity.py"), "--smoke",
                           "--out", str(tmp_path / "problems"), "--json", str(tmp_path / "report.json")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["problems"] == report["imported"] == report["verified"] == 2, proc.stdout
    assert (tmp_path / "problems/level2/76_Gemm_Add_ReLU.py").is_file()


def _hand_made_run(tmp_path, task, source, params):
    """A run directory holding one correct candidate (scores made up: export only reads them)."""
    from kernelfoundry.search.archive import ArchiveSpec
    from kernelfoundry.search.history import spec_to_meta
    from kernelfoundry.store import RunStore
    spec = ArchiveSpec(names=("tiling", "memory_pattern"), ranges=((0.0, 24.0), (0.0, 6.0)), bins=(12, 6),
                       labels={"tiling": [f"t{i}" for i in range(12)], "memory_pattern": [f"m{i}" for i in range(6)]})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    store = RunStore(run_dir / "run.sqlite")
    store.set_meta("task", task.to_dict())
    store.set_meta("archive_spec", spec_to_meta(spec))
    store.set_meta("config", {"hardware": ["h100"]})
    hw = {"h100": {"latency_s": 1e-4, "sol_fraction": 0.3, "baseline_s": 2e-4, "best_params": params}}
    store.add_candidate({"id": 0, "parent_ids": [], "mutator": "seed", "kind": "seed", "description": "",
                         "source": source, "passed": True, "gate": None, "reason": "", "gates": [],
                         "descriptors": {"tiling": 8.0, "memory_pattern": 1.5}, "objective": 2.0, "hardware": hw,
                         "archive_status": 2, "llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                         "cost_usd": 0.0, "seconds": 1.0, "verify_seconds": 1.0})
    store.close()
    return run_dir


def test_export_format_kernelbench_writes_modelnew_and_the_problem(tasks, tmp_path):
    from kernelfoundry import export
    from kernelfoundry.kernelbench.contract import check_contract
    task = tasks["1_Linear_Tanh_Scale"]
    source = task.seeds[0].read_text()
    params = {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32, "BLOCK": 256, "num_warps": 4}
    run_dir = _hand_made_run(tmp_path, task, source, params)
    out = tmp_path / "solutions"
    assert export.main([str(run_dir), "--format", "kernelbench", "--out", str(out)]) == 0
    import json
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "kernelbench" and manifest["problem_file"] == "1_Linear_Tanh_Scale.py"
    assert (out / "1_Linear_Tanh_Scale.py").read_text() == FILES["1_Linear_Tanh_Scale"].read_text()
    solution = out / manifest["kernels"][0]["file"]
    text = solution.read_text()
    assert "class ModelNew(Model):" in text and "def forward(self, x):" in text
    assert "self.get_parameter('fc.weight')" in text and "BLOCK_M=64" in text
    result = check_contract(solution, FILES["1_Linear_Tanh_Scale"])
    assert result["ok"], result["reason"]
    # bench_elites.py ships too and checks the ModelNew modules' kernels (interpreter, fake timer)
    import csv
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "bench_elites.py", "--shapes", "check", "--out", "m.csv"], cwd=out,
                          env={**env, "KF_BENCH_FAKE": "1"}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(out / "m.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["row"] == "kernel"]
    assert rows and all(r["kernel"] == solution.name and r["correct"] == "True" for r in rows), rows


def test_export_format_kernelbench_refuses_runs_of_task_files(tmp_path, capsys):
    from kernelfoundry import export
    from kernelfoundry.task import load_task
    task = load_task(REPO_DIR / "experiments/tasks/relu.yaml")
    run_dir = _hand_made_run(tmp_path, task, task.seeds[0].read_text(), {"BLOCK": 256, "num_warps": 4,
                                                                          "num_stages": 1})
    assert export.main([str(run_dir), "--format", "kernelbench", "--out", str(tmp_path / "o")]) == 2
    assert "was not imported from a KernelBench problem file" in capsys.readouterr().err


def test_tile_columns_applies_to_a_generated_middle_dim_reduction(tasks):
    """The built-in operators reach imported problems as they reach the suite's tasks: a mean over the middle
    dim gets 2-D column tiles (coalesced loads), and stays correct."""
    from kernelfoundry.evaluate.inprocess import check_trusted
    from tests.mutate.test_builtin_run import apply
    task = tasks["4_Mean_Middle_Dim"]
    seed = task.seeds[0].read_text()
    assert "j1 = pid % kd1" in seed and "j0 = pid // kd1" in seed           # the form tile_columns reads
    tiled = apply("tile_columns", seed)
    assert "tl.zeros([BLOCK_R, BLOCK_C]" in tiled and "triton.cdiv(reduce_1_in0.shape[1], BLOCK_C)" in tiled
    gate = check_trusted(tiled, task, profiles=("normal", "large"))
    assert gate.passed, gate.reason


def test_a_problem_folder_bench_counts_problems_without_a_start_as_unsolved_by_category(tmp_path, cache,
                                                                                        monkeypatch):
    from kernelfoundry import bench_report
    from kernelfoundry.bench import load_suite, load_suite_tasks
    folder = tmp_path / "level2"
    folder.mkdir()
    (folder / "1_Swish_Scaled.py").write_text(FILES["1_Swish_Scaled"].read_text())
    tail = "def get_inputs():\n    return [torch.randn(64, 64)]\ndef get_init_inputs():\n    return []\n"
    head = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
    (folder / "2_Sort.py").write_text(head + "        return torch.sort(x, dim=1)[0]\n" + tail)
    (folder / "3_Positive.py").write_text(head + "        return x[x > 0]\n" + tail)
    tasks, paths, unstarted = load_suite_tasks(load_suite(folder), drafts=False)
    assert [t.name for t in tasks] == ["1_Swish_Scaled"] and [p.name for p in paths] == ["1_Swish_Scaled.py"]
    why = {u["task"]: u for u in unstarted}
    assert set(why) == {"2_Sort", "3_Positive"} and all(u["level"] == 2 for u in unstarted)
    assert why["2_Sort"]["category"].startswith("no template: aten.sort"), why["2_Sort"]
    assert why["3_Positive"]["category"].startswith("import: ") and "data-dependent" in why["3_Positive"]["reason"]
    # with an LLM the problem without a template starts (from drafts); the one that cannot import does not
    tasks, _, unstarted = load_suite_tasks(load_suite(folder), drafts=True)
    assert [t.name for t in tasks] == ["1_Swish_Scaled", "2_Sort"] and tasks[1].no_seed_reason
    assert [u["task"] for u in unstarted] == ["3_Positive"]
    # the report: fast_p over all three problems, the two unstarted ones by category
    monkeypatch.setattr(bench_report, "_plot_curves", lambda out, rows: [])
    rows = [{"task": "1_Swish_Scaled", "level": 2, "method": "m", "seed": 0, "best_objective": 2.0,
             "qd_score": 1.0, "coverage": 0.1, "correctness_rate": 1.0, "llm_cost_usd": 0.0, "n_candidates": 4}]
    _, _, unstarted = load_suite_tasks(load_suite(folder), drafts=False)
    table = bench_report.write_report(tmp_path, rows, suite="level2", budget=4, methods=["m"], seeds=[0],
                                      levels={"1_Swish_Scaled": 2}, unstarted=unstarted)
    report = (tmp_path / "report.md").read_text()
    assert "| m | 0.333 | 0.333 |" in table                       # fast_0, fast_1: 1 of 3 problems
    assert "## Problems without a starting kernel" in report and "| no template: aten.sort" in report
    assert "- 3_Positive (level 2): " in report


def test_failure_categories_count_the_reason_not_its_shape_or_config():
    from kernelfoundry.kernelbench.coverage import failure_category
    timeout = ("shape {x_1=16, x_4=16}, profile 'normal', config BLOCK_K=64,BLOCK_M=16: launch did not finish "
               "within 30 s; the kernel must finish quickly at these shapes (look for an endless loop).")
    other = timeout.replace("x_1=16, x_4=16", "x_0=2").replace("BLOCK_M=16", "BLOCK_M=32")
    assert failure_category("seed incorrect (correctness)", timeout) == failure_category(
        "seed incorrect (correctness)", other) == ("seed incorrect (correctness): launch did not finish within "
                                                   "30 s; the kernel must finish quickly at these shapes")
    assert failure_category("seed", "op aten.sort.default has no template (sorting)") == \
        "no template: aten.sort.default"
    assert failure_category("import", "problem file /x/y.py cannot be imported: Model cannot be built at check "
                                      "shape {'x': 1} with constructor arguments [32, 512] (ValueError)") == \
        "import: Model cannot be built at check shape {..} with constructor arguments [..]"
