"""The engine benchmark's smoke mode runs end to end (it once broke silently on a worker API change)."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_engine_smoke():
    env = {**os.environ, "RAY_DEDUP_LOGS": "0"}
    done = subprocess.run([sys.executable, str(REPO / "experiments" / "bench_engine.py"), "--smoke"], cwd=REPO,
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    overhead = next(line for line in lines if line.strip().startswith("200 "))
    assert float(overhead.split()[1]) > 0
    efficiency = [line.split() for line in lines if line.split()[:1] in (["1"], ["2"]) and len(line.split()) == 4]
    assert [row[0] for row in efficiency] == ["1", "2"] and all(0 < float(row[3]) <= 1.5 for row in efficiency)
