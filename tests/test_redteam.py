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

from kernelfoundry.evaluate.hack import hack_gate
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


def test_baselines_differ_from_seeds_only_in_params():
    for task, _, t, seed, _, baseline in APPLICATIONS:
        if baseline == seed:
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
