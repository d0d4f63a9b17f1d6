"""The verifier benchmark's smoke mode runs end to end (so an API change cannot silently break it)."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_verifier_smoke(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, str(REPO / "experiments" / "bench_verifier.py"), "--smoke",
                           "--json", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "level-1 overall: median" in done.stdout and "compile s" in done.stdout
    data = json.loads(out.read_text())
    (task,) = data["tasks"]
    assert task["task"] == "relu" and task["n"] == 1 and task["passed"] == 1
    row = task["rows"][0]
    assert row["check"] > 0 and row["trace"] > 0 and row["seconds"] >= row["check"]
