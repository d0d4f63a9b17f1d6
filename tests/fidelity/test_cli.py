"""``python -m kernelfoundry.fidelity``: tables, JSON, plot, thresholds and usage errors."""

import json

from kernelfoundry.fidelity.__main__ import main

from .common import FIDELITY_DIR


def test_tables_json_and_plot(tmp_path, capsys):
    path = str(FIDELITY_DIR / "kernelbench_h100.yaml")
    assert main([path, "--worst", "3"]) == 0
    out = capsys.readouterr().out
    assert "| **all** | 137 |" in out and "| conv-transposed |" in out and "Worst 3:" in out and "met." in out
    assert "In-sample vs held-out (leave-family-out" in out and "in-sample | held-out |" in out
    assert main([path, "--json", "--plot", str(tmp_path / "f.png")]) == 0
    data = json.loads(capsys.readouterr().out)["kernelbench_h100"]
    assert data["summaries"]["all"]["n"] == 137 and len(data["rows"]) == 137
    assert data["held_out"] == "leave-family-out" and all(r["held_out_ms"] > 0 for r in data["rows"])
    assert {r["family"] for r in data["rows"]} >= {"conv-transposed 3D", "matmul"}
    assert (tmp_path / "f.png").stat().st_size > 10_000


def test_broken_thresholds_exit_1_and_usage_errors_exit_2(tmp_path, capsys):
    src = (FIDELITY_DIR / "kernelbench_h100.yaml").read_text()
    ds = tmp_path / "kernelbench_h100.yaml"
    ds.write_text(src)
    (tmp_path / "kernelbench_h100.thresholds.yaml").write_text("geomean_error_max: 1.0\n")
    assert main([str(ds)]) == 1
    assert "BROKEN: geometric-mean error" in capsys.readouterr().out
    assert main([str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main([str(ds), "--write-bands", "--no-held-out"]) == 2      # a band table needs the held-out error
    assert "--write-bands needs the held-out error" in capsys.readouterr().err
