"""The memory benchmark's smoke mode runs end to end and prints its three tables."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_memory_smoke():
    done = subprocess.run([sys.executable, str(REPO / "experiments" / "bench_memory.py"), "--smoke"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    size_table = done.stdout.split("reads at a run's start")[0]
    rows = {line.split()[0]: line.split() for line in size_table.splitlines() if line.split()[:1] in (["500"],
                                                                                                       ["1000"])}
    assert 0 < float(rows["1000"][1]) < 5                      # MB for 1k experiences
    added = [line.split() for line in done.stdout.splitlines() if line.strip().startswith("1000 experiences")]
    assert added and float(added[0][2]) > 0
