"""The routing benchmark's smoke mode runs end to end: four arms of sim LLMs through the real engine."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_routing_smoke(tmp_path):
    env = {**os.environ, "RAY_DEDUP_LOGS": "0", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(REPO / "experiments" / "bench_routing.py"), "--smoke",
                           "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.split()
            and line.split()[0] in ("fixed-50/50", "strong", "fast", "router") and len(line.split()) == 8}
    assert set(rows) == {"fixed-50/50", "strong", "fast", "router"}
    cost = {arm: float(r[3].split("±")[0]) for arm, r in rows.items()}
    assert cost["fast"] < cost["strong"] and cost["fixed-50/50"] > 0 and cost["router"] > 0
    assert rows["strong"][6].endswith(":0") and rows["fast"][6].startswith("0:")    # strong:fast calls
    assert all(float(r[4].split("±")[0]) > 0 for r in rows.values())     # virtual LLM seconds are counted
    overhead = next(line for line in done.stdout.splitlines() if line.startswith("router alone"))
    assert float(overhead.split()[2]) < 0.5
    assert sum(line.strip().startswith(("best objective", "cost <=", "seconds <=", "objective per dollar"))
               for line in done.stdout.splitlines()) == 4
