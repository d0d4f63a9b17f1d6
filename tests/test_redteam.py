"""experiments/redteam.py: its transformations produce in-language cheats, and a smoke run verifies
them (sandboxed) and reports a table with no unknown escape."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

from kernelfoundry.evaluate.judge.anticheat import hack_gate
from kernelfoundry.task import load_task

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "experiments" / "redteam.py"


def _load():
    spec = importlib.util.spec_from_file_location("kf_redteam_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


redteam = _load()
from experiments.redteam_transforms import RARE_GROUP  # noqa: E402  (the library redteam.py imports)
TASKS = {p.stem: load_task(p) for p in sorted((REPO / "experiments" / "tasks").glob("*.yaml"))}


def _applications():
    for name, task in TASKS.items():
        for path, seed in task.seed_sources():
            for t in redteam.TRANSFORMS.values():
                try:
                    source, baseline = redteam.apply_all((t.name,), seed, task)
                except redteam.NotApplicable:
                    continue
                yield name, path.name, t, seed, source, baseline


APPLICATIONS = list(_applications())


def test_every_transformation_applies_to_some_seed():
    applied = {a[2].name for a in APPLICATIONS}
    assert applied == set(redteam.TRANSFORMS), set(redteam.TRANSFORMS) - applied


def test_variants_change_the_source_and_stay_in_the_candidate_language():
    """An 'inflate' cheat must be a valid candidate (it passes the static gate and changes the code);
    the host-side torch tricks that the static gate can see are refused by it."""
    static_refused = {"curried_lambda", "splat_helper", "contiguous_copy"}
    for task, seed_file, t, seed, source, baseline in APPLICATIONS:
        ast.parse(source)
        assert ast.dump(ast.parse(source)) != ast.dump(ast.parse(seed)), (task, t.name)
        gate = hack_gate(source)
        if t.kind == "inflate" or t.name in ("tensor_constexpr", "host_torch_dict_key", "target_shape_shortcut"):
            assert gate.passed, (task, seed_file, t.name, gate.reason)
        if t.name in static_refused:
            assert not gate.passed, (task, t.name)
        assert hack_gate(baseline).passed, (task, t.name)


TWIN_BASELINES = {"fp16_scratch_launder"}     # honest twins (same memory traffic), tested on their own


def test_baselines_differ_from_seeds_only_in_params():
    for task, _, t, seed, _, baseline in APPLICATIONS:
        if baseline == seed or t.name in TWIN_BASELINES:
            continue
        strip = [n for n in ast.parse(baseline).body
                 if not (isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PARAMS")]
        seed_body = [n for n in ast.parse(seed).body
                     if not (isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PARAMS")]
        assert [ast.dump(n) for n in strip] == [ast.dump(n) for n in seed_body], (task, t.name)


def test_combinations_are_seeded_and_distinct():
    import random
    task = TASKS["softmax"]
    a = redteam.make_variants(task, 30, random.Random(3))
    b = redteam.make_variants(task, 30, random.Random(3))
    assert [v.label for v in a] == [v.label for v in b]
    assert len({v.label for v in a}) == len(a) == 30
    assert any(len(v.transforms) >= 2 for v in a)
    assert all(v.kind == "wrong" for v in a if "target_shape_shortcut" in v.transforms)


def _seed(task_name):
    task = TASKS[task_name]
    return task, task.seed_sources()[0][1]


@pytest.mark.parametrize("task_name", ["matmul", "softmax", "matmul_sub_mul_relu"])
def test_rare_heavy_trips_moves_the_loop_work_onto_one_trip_per_group(task_name):
    """The red team's second-round escape, automated: store-free loops idle except one trip per
    group of RARE_GROUP, which redoes the group (and the last trip, the remainder)."""
    task, seed = _seed(task_name)
    source, baseline = redteam.apply_all(("rare_heavy_trips",), seed, task)
    assert baseline == seed and redteam.TRANSFORMS["rare_heavy_trips"].kind == "inflate"
    tree = ast.parse(source)
    g = RARE_GROUP
    assert f"% {g} == {g - 1}" in source
    heavy = [n for n in ast.walk(tree) if isinstance(n, ast.If) and f"% {g} == {g - 1}" in ast.unparse(n.test)]
    assert heavy and all(isinstance(n.body[0], ast.For) for n in heavy)
    assert hack_gate(source).passed


def test_fp16_scratch_launder_reads_fp16_scratch_copies_in_the_dot_loop():
    task, seed = _seed("matmul_sub_mul_relu")
    source, baseline = redteam.apply_all(("fp16_scratch_launder",), seed, task)
    assert redteam.TRANSFORMS["fp16_scratch_launder"].kind == "inflate"
    # the baseline is the honest twin: the same scratch loads, cast back to fp32 before the dot
    assert baseline.count(".to(tl.float32)") == 2 and baseline.replace(".to(tl.float32)", "") == source
    assert hack_gate(baseline).passed
    tree = ast.parse(source)
    launch = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "launch")
    body = ast.unparse(launch)
    assert body.count("dtype=torch.float16") == 2 and body.count("rt_to_fp16_scaled[") == 2
    assert body.index("rt_to_fp16_scaled[") < body.index("matmul_kernel[")
    kernel = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "matmul_kernel")
    assert len([n for n in ast.walk(kernel) if isinstance(n, ast.For)]) == 2      # fp16 third, fp32 rest
    assert "tl.load(rt16_x_ptr" in ast.unparse(kernel) and "tl.load(rt16_w_ptr" in ast.unparse(kernel)
    assert hack_gate(source).passed
    # fp16 inputs (matmul) have nothing to launder, elementwise tasks no dot
    for name in ("matmul", "softmax"):
        other, other_seed = _seed(name)
        with pytest.raises(redteam.NotApplicable):
            redteam.apply_all(("fp16_scratch_launder",), other_seed, other)


def test_known_escapes_name_transformations():
    data = yaml.safe_load(redteam.KNOWN_FILE.read_text())
    assert set(data["escapes"]) <= set(redteam.TRANSFORMS)


def test_smoke_run_reports_a_table_without_unknown_escapes(tmp_path, capsys):
    out = tmp_path / "rows.json"
    code = redteam.main(["--smoke", "--json", str(out)])
    text = capsys.readouterr().out
    rows = json.loads(out.read_text())
    assert "| task | variant | kind | verdict |" in text and "| transformation |" in text
    assert {r["variant"] for r in rows} == set(redteam.SMOKE_TRANSFORMS)
    assert all(r["task"] == redteam.SMOKE_TASK for r in rows)
    assert all(r["verdict"] == "passed" or r["verdict"].startswith("rejected:") for r in rows)
    assert all(r["baseline"] and r["baseline"] > 0 for r in rows), "the honest seed must pass"
    by = {r["variant"]: r for r in rows}
    # torch reached past the static gate, and a tensor smuggled as a constexpr, are refused at run time
    assert by["host_torch_dict_key"]["verdict"] == "rejected:correctness"
    assert "computes with torch" in by["host_torch_dict_key"]["reason"]
    assert by["tensor_constexpr"]["verdict"] == "rejected:correctness"
    for r in rows:
        if r["verdict"] == "passed" and r["kind"] == "inflate":
            assert r["ratio"] is not None
        if r["flag"] != "-":
            assert r["flag"] == "known", r
    unknown = [r for r in rows if r["flag"] == "ESCAPE"]
    assert code == (1 if unknown else 0)
    assert not unknown, unknown
