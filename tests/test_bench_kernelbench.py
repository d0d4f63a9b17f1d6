"""The KernelBench coverage benchmark's smoke mode runs end to end (an API change cannot silently break it)."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_kernelbench_smoke(tmp_path):
    out = tmp_path / "rows.json"
    env = {**os.environ, "KERNELFOUNDRY_KB_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(REPO / "experiments" / "bench_kernelbench.py"), "--smoke",
                           "--json", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "level 1: 1 files; imported 1/1 (100%), starting kernel 1/1 (100%), correct at the check shapes 1/1" \
        in done.stdout
    assert "verify of the correct seeds: 1/1 pass" in done.stdout
    (row,) = json.loads(out.read_text())
    assert row["file"] == "1_Swish_Scaled.py" and row["correct"] and row["verified"]
    assert row["stages"]["trace"] > 0 and row["verify_s"] >= row["stages"]["correctness"]
    assert row["objective"] > 0
    hits, misses = row["compile_cache"]                 # the compile gate ran: its cache use is reported
    assert hits + misses >= 1 and f"compile cache: {hits} of {hits + misses} compiles" in done.stdout


def test_bench_kernelbench_counts_failures_by_category():
    sys.path.insert(0, str(REPO / "experiments"))
    try:
        from bench_kernelbench import category, summarize
    finally:
        sys.path.pop(0)
    assert category("seed", "op aten.sort.default has no template in the seed generator") == \
        "no template: aten.sort.default"
    assert category("import", "problem file /x/a.py cannot be imported: the import job killed: memory over 6 GB.") \
        == "import: the import job killed: memory over 6 GB."
    rows = [{"level": 1, "imported": True, "seeded": False, "correct": None, "category": "no template: aten.sort"},
            {"level": 1, "imported": True, "seeded": True, "correct": True},
            {"level": 1, "imported": True, "seeded": False, "correct": None, "category": "no template: aten.sort"}]
    text = "\n".join(summarize(rows, verify=False))
    assert "level 1: 3 files; imported 3/3 (100%), starting kernel 1/3 (33%), correct at the check shapes 1/3" in text
    assert "  2  no template: aten.sort" in text
