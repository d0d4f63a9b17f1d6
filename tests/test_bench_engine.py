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
    rows = [line.split() for line in done.stdout.splitlines()]
    overhead = next(r for r in rows if r[:1] == ["200"])
    assert len(overhead) == 4 and float(overhead[1]) > 0 and float(overhead[2]) > 0
    in_flight = [r for r in rows if len(r) == 6 and r[0] in ("16", "64")]
    assert [r[0] for r in in_flight] == ["16", "64"] and all(int(r[1]) == 2 * int(r[0]) for r in in_flight)
    assert all(0 < float(r[5]) <= 1.05 for r in in_flight)          # efficiency: ideal / measured wall time
    assert any(line.startswith("largest in-flight count") for line in done.stdout.splitlines())
    efficiency = [r for r in rows if r[:1] in (["1"], ["2"]) and len(r) == 4]
    assert [r[0] for r in efficiency] == ["1", "2"] and all(0 < float(r[3]) <= 1.5 for r in efficiency)
