"""Without an address a run starts its own Ray, whatever an earlier Ray left in ray_current_cluster."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
START = ("import ray\n"
         "from kernelfoundry.search.cluster import start_ray\n"
         "assert start_ray(workers=1)\n"
         "print('CPUS', ray.cluster_resources()['CPU'])\n"
         "ray.shutdown()\n")
PLAIN = "import ray\nray.init(num_cpus=1)\n"


def test_a_stale_ray_current_cluster_is_ignored():
    tmp_path = Path(tempfile.mkdtemp(prefix="kfs", dir="/tmp"))    # short: Ray's socket paths
    try:
        check_stale_file_ignored(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def check_stale_file_ignored(tmp_path):
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text("127.0.0.1:9")   # a head that is long gone
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_TMPDIR=str(tmp_path), PYTHONPATH=str(REPO))
    plain = subprocess.run([sys.executable, "-c", PLAIN], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120)
    assert plain.returncode != 0 and "must not be provided" in plain.stderr    # what Ray does on its own
    ours = subprocess.run([sys.executable, "-c", START], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert ours.returncode == 0, ours.stderr[-2000:]
    assert "CPUS" in ours.stdout
