"""plot and export on a hand-made run: files appear, exported kernels run and match the reference."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelfoundry import export, plot
from kernelfoundry.search.history import spec_to_meta
from kernelfoundry.search.archive import ArchiveSpec
from kernelfoundry.store import RunStore
from kernelfoundry.task import load_task

REPO = Path(__file__).parents[2]
SPEC = ArchiveSpec(names=("tiling", "memory_pattern"), ranges=((0.0, 24.0), (0.0, 6.0)), bins=(12, 6),
                   labels={"tiling": [f"t{i}" for i in range(12)], "memory_pattern": [f"m{i}" for i in range(6)]})


def make_run(tmp_path: Path) -> Path:
    task = load_task(REPO / "experiments" / "tasks" / "softmax.yaml")
    source = task.seeds[0].read_text()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    store = RunStore(run_dir / "run.sqlite")
    store.set_meta("task", task.to_dict())
    store.set_meta("archive_spec", spec_to_meta(SPEC))
    for cid, (block, obj, tiling) in enumerate(((256, 0.8, 18.5), (512, 1.3, 18.6), (512, 0.9, 3.0))):
        hw = {name: {"latency_s": 1e-3 / obj, "sol_fraction": 0.3 * obj, "baseline_s": 1e-3,
                     "best_params": {"BLOCK_N": block, "num_warps": 4, "num_stages": 1}}
              for name in ("h100", "ascend910b2")}
        store.add_candidate({"id": cid, "parent_ids": [], "mutator": "seed", "kind": "seed", "description": "",
                             "source": source, "passed": True, "gate": None, "reason": "", "gates": [],
                             "descriptors": {"tiling": tiling, "memory_pattern": 2.5}, "objective": obj,
                             "hardware": hw, "archive_status": 2, "llm_calls": 0, "prompt_tokens": 0,
                             "completion_tokens": 0, "cost_usd": 0.0, "seconds": 1.0, "verify_seconds": 1.0})
    store.add_candidate({"id": 3, "parent_ids": [0], "mutator": "builtin:x", "kind": "mutate", "description": "",
                         "source": "broken", "passed": False, "gate": "hack", "reason": "import os", "gates": [],
                         "hardware": {}, "archive_status": 0, "llm_calls": 0, "prompt_tokens": 0,
                         "completion_tokens": 0, "cost_usd": 0.0, "seconds": 1.0, "verify_seconds": 0.0})
    store.close()
    return run_dir


def test_plot_writes_heatmap_and_progress(tmp_path):
    run_dir = make_run(tmp_path)
    assert plot.main([str(run_dir)]) == 0
    for name in ("heatmap.png", "progress.png"):
        png = run_dir / "plots" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_export_files_run_and_match_reference(tmp_path):
    run_dir = make_run(tmp_path)
    out = tmp_path / "kernels"
    assert export.main([str(run_dir), "--out", str(out), "--top", "1"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert [k["candidate_id"] for k in manifest["kernels"]] == [1]          # best of the two elites
    entry = manifest["kernels"][0]
    text = (out / entry["file"]).read_text()
    assert "objective: 1.3x" in text and "h100:" in text and "TUNED_PARAMS" in text
    script = f"""
import importlib.util, torch
spec = importlib.util.spec_from_file_location("k", {str(out / entry['file'])!r})
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
x = torch.randn(5, 700)
assert m.TUNED_PARAMS["h100"]["BLOCK_N"] == 512
for kw in ({{}}, {{"hardware": "ascend910b2"}}, {{"BLOCK_N": 256}}):
    y = m.launch(x, **kw)
    torch.testing.assert_close(y, torch.softmax(x, -1), atol=1e-5, rtol=1e-4)
print("ok")
"""
    env = dict(os.environ, TRITON_INTERPRET="1")
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]


def test_export_all_and_errors(tmp_path, capsys):
    run_dir = make_run(tmp_path)
    assert export.main([str(run_dir)]) == 0
    assert len(json.loads((run_dir / "export" / "manifest.json").read_text())["kernels"]) == 2
    assert export.main([str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert plot.main([str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        export.main(["--top"])
