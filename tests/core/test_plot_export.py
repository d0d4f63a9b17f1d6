"""plot and export on a hand-made run: files appear, exported kernels run and match the reference."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelfoundry import export, plot
from kernelfoundry.export_source import tuned_source
from kernelfoundry.search.history import spec_to_meta
from kernelfoundry.search.archive import ArchiveSpec
from kernelfoundry.store import RunStore
from kernelfoundry.task import load_task

REPO = Path(__file__).parents[2]
SPEC = ArchiveSpec(names=("tiling", "memory_pattern"), ranges=((0.0, 24.0), (0.0, 6.0)), bins=(12, 6),
                   labels={"tiling": [f"t{i}" for i in range(12)], "memory_pattern": [f"m{i}" for i in range(6)]})


def make_run(tmp_path: Path, source: str | None = None, hardware_order=("h100", "ascend910b2")) -> Path:
    task = load_task(REPO / "experiments" / "tasks" / "softmax.yaml")
    source = source or task.seeds[0].read_text()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    store = RunStore(run_dir / "run.sqlite")
    store.set_meta("task", task.to_dict())
    store.set_meta("archive_spec", spec_to_meta(SPEC))
    store.set_meta("config", {"hardware": list(hardware_order)})
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


def test_export_files_run_match_reference_and_pass_the_verifier(tmp_path):
    run_dir = make_run(tmp_path)
    out = tmp_path / "kernels"
    assert export.main([str(run_dir), "--out", str(out), "--top", "1"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert [k["candidate_id"] for k in manifest["kernels"]] == [1]          # best of the two elites
    entry = manifest["kernels"][0]
    assert entry["default_hardware"] == "h100"
    path = out / entry["file"]
    text = path.read_text()
    assert "# objective: 1.3x" in text and "#   h100:" in text
    assert "launch(*inputs, BLOCK_N=512, num_warps=4, num_stages=1)" in text
    assert 'PARAMS = {"BLOCK_N": [512, 256]' in text.replace("'", '"')         # the tuned value first
    assert "def launch(x, *, BLOCK_N=512, num_warps=4, num_stages=1):" in text
    script = f"""
import importlib.util, torch
spec = importlib.util.spec_from_file_location("k", {str(path)!r})
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
x = torch.randn(5, 700)
for kw in ({{}}, {{"BLOCK_N": 256}}):
    torch.testing.assert_close(m.launch(x, **kw), torch.softmax(x, -1), atol=1e-5, rtol=1e-4)
print("ok")
"""
    env = dict(os.environ, TRITON_INTERPRET="1")
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
    # still a valid candidate: the verifier passes it (so it can be checked again or seed a task)
    res = subprocess.run([sys.executable, "-m", "kernelfoundry.verify", str(REPO / "experiments/tasks/softmax.yaml"),
                          str(path), "--hardware", "h100"], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "PASSED" in res.stdout, res.stdout[-3000:] + res.stderr[-2000:]


def test_tuned_source_keeps_future_imports_first_and_defaults_positional_params():
    source = ('"""doc"""\nfrom __future__ import annotations\n\nPARAMS = {"B": [1, 2, 4], "num_warps": [4]}\n\n\n'
              'def launch(x, B, num_warps: int = 8):  # keep me\n    return x\n')
    out, missing = tuned_source(source, {"B": 4, "num_warps": 4})
    assert missing == []
    assert out.startswith('"""doc"""\nfrom __future__ import annotations\n')
    assert "PARAMS = {'B': [4, 1, 2], 'num_warps': [4]}" in out
    assert "def launch(x, B=4, num_warps: int = 4):  # keep me" in out
    # a positional parameter before one without a default cannot get one: named for the header
    out, missing = tuned_source("PARAMS = {'B': [1]}\ndef launch(B, x):\n    return x\n", {"B": 1})
    assert missing == ["B"] and "def launch(B, x):" in out


def test_export_of_a_docstring_and_future_import_source_compiles(tmp_path):
    seed = (REPO / "experiments/tasks/kernels/softmax_naive.py").read_text()
    doc, rest = seed.split("\n", 1)                 # the one-line docstring, the rest
    assert doc.startswith('"""')
    run_dir = make_run(tmp_path, source=f"{doc}\nfrom __future__ import annotations\n{rest}")
    assert export.main([str(run_dir)]) == 0
    for path in (run_dir / "export").glob("*.py"):
        compile(path.read_text(), str(path), "exec")


def test_hardware_without_a_valid_config_is_named_not_exported_as_default(tmp_path):
    run_dir = make_run(tmp_path, hardware_order=("ascend910b2", "h100"))
    store = RunStore(run_dir / "run.sqlite", create=False)
    row = store.get_candidate(1)                   # candidate 1: nothing fits ascend910b2
    hw = dict(row.hardware, ascend910b2={"latency_s": float("inf"), "sol_fraction": None, "baseline_s": 1e-3,
                                         "best_params": {}})
    store.conn.execute("UPDATE candidates SET hardware = ? WHERE id = 1", (json.dumps(hw),))
    store.close()
    assert export.main([str(run_dir), "--top", "1"]) == 0
    manifest_text = (run_dir / "export" / "manifest.json").read_text()
    assert "Infinity" not in manifest_text                       # strict JSON
    entry = json.loads(manifest_text)["kernels"][0]
    assert entry["default_hardware"] == "h100" and entry["hardware"]["ascend910b2"]["latency_s"] is None
    text = (run_dir / "export" / entry["file"]).read_text()
    assert "#   ascend910b2: no valid config" in text and "def launch(x, *, BLOCK_N=512," in text


def test_export_replaces_its_previous_files_and_keeps_the_users(tmp_path, capsys):
    run_dir = make_run(tmp_path)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    assert export.main([str(run_dir), "--out", str(out)]) == 2
    assert "notes.txt" in capsys.readouterr().err and (out / "notes.txt").read_text() == "my notes"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]             # nothing written
    assert export.main([str(run_dir), "--out", str(out), "--force"]) == 0
    assert len(list(out.glob("softmax_*.py"))) == 2
    assert export.main([str(run_dir), "--out", str(out), "--top", "1", "--force"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["bench_elites.py", "manifest.json", "notes.txt", "softmax_01_c1.py"]
    # the default directory RUN_DIR/export holds only exports: a new one replaces the old one
    assert export.main([str(run_dir)]) == 0 and export.main([str(run_dir), "--top", "1"]) == 0
    assert sorted(p.name for p in (run_dir / "export").iterdir()) == ["bench_elites.py", "manifest.json", "softmax_01_c1.py"]


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


def test_unwritable_outputs_are_errors_not_tracebacks(tmp_path, capsys):
    run_dir = make_run(tmp_path)
    (run_dir / "plots").write_text("a file where the plots directory goes")
    assert plot.main([str(run_dir)]) == 2
    assert "cannot write the plots to" in capsys.readouterr().err
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the export directory goes")
    assert export.main([str(run_dir), "--out", str(blocked / "sub")]) == 2
    assert "cannot create export directory" in capsys.readouterr().err
