"""Multi-node runs on Ray's own test cluster (several nodes on this machine): code shipping,
placement, a node lost mid-run, the head lost (then a local resume that ignores the stale
ray_current_cluster).  One cluster per module; its nodes' PYTHONPATH holds a stub
``kernelfoundry`` that refuses to import, so workers run only code the driver shipped."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("cluster_driver.py")
STUB_ERROR = "kernelfoundry is not installed on this node"


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster
    tmp = Path(tempfile.mkdtemp(prefix="kfc", dir="/tmp"))          # short: Ray's socket paths
    stub = tmp / "stub" / "kernelfoundry"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(f"raise ImportError({STUB_ERROR!r})\n")
    saved = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = str(tmp)         # Ray writes ray_current_cluster here, not in /tmp/ray
    node_env = {"PYTHONPATH": str(stub.parent), "RAY_TMPDIR": str(tmp)}
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 2, "env_vars": node_env,
        "_system_config": {"health_check_period_ms": 500, "health_check_timeout_ms": 500,
                           "health_check_failure_threshold": 3}})
    try:
        for _ in range(2):
            c.add_node(num_cpus=2, env_vars=node_env)
        c.wait_for_nodes()
        c.tmp, c.node_env = tmp, node_env
        yield c
    finally:
        c.shutdown()
        if saved is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = saved
        shutil.rmtree(tmp, ignore_errors=True)


def driver_env(cluster):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    env.update(PYTHONPATH=str(REPO), RAY_TMPDIR=str(cluster.tmp), RAY_DEDUP_LOGS="0",
               KERNELFOUNDRY_HEAD_GRACE_S="4")
    return env


def start_driver(cluster, run_dir, *, workers, budget, sleep):
    return subprocess.Popen([sys.executable, str(DRIVER), cluster.address, str(run_dir), "--workers", str(workers),
                             "--budget", str(budget), "--sleep", str(sleep)], cwd=cluster.tmp,
                            env=driver_env(cluster), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=240):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    line = next(x for x in out.splitlines() if x.startswith("SUMMARY "))
    return json.loads(line[len("SUMMARY "):]), err


def rows(run_dir):
    db = sqlite3.connect(run_dir / "run.sqlite")
    try:
        return db.execute("SELECT id, gate, reason, job_seed, passed FROM candidates ORDER BY id").fetchall()
    finally:
        db.close()


def test_code_is_shipped_to_nodes_whose_pythonpath_lacks_the_project(cluster, tmp_path):
    env = driver_env(cluster)
    probe = ("import ray; ray.init(address=%r, log_to_driver=False)\n"
             "f = ray.remote(num_cpus=0)(lambda: __import__('kernelfoundry').__file__)\n"
             "try:\n    print('IMPORTED', ray.get(f.remote()))\n"
             "except Exception as e:\n    print('FAILED', e)\n") % cluster.address
    unshipped = subprocess.run([sys.executable, "-c", probe], cwd=cluster.tmp, env=env, capture_output=True,
                               text=True, timeout=120)
    assert "FAILED" in unshipped.stdout and STUB_ERROR in unshipped.stdout, unshipped.stdout + unshipped.stderr
    done = subprocess.run([sys.executable, "-m", "kernelfoundry.evolve", str(REPO / "experiments/tasks/relu.yaml"),
                           "--ray-address", cluster.address, "--budget", "1", "--workers", "1", "--no-memory",
                           "--out", str(tmp_path / "run")], cwd=cluster.tmp, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["n_candidates"] == 1 and summary["n_correct"] == 1, summary["gate_failures"]


def test_a_node_without_a_dependency_is_named(cluster, tmp_path):
    done = subprocess.run([sys.executable, str(DRIVER), cluster.address, str(tmp_path / "run"), "--workers", "2",
                           "--budget", "4", "--needs", "kf_absent_dependency"], cwd=cluster.tmp,
                          env=driver_env(cluster), capture_output=True, text=True, timeout=240)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "A node lacks a dependency (No module named 'kf_absent_dependency')" in done.stderr, done.stderr[-3000:]


def test_workers_spread_over_every_node_and_a_lost_node_costs_only_its_jobs_in_flight(cluster, tmp_path):
    doomed = cluster.add_node(num_cpus=2, env_vars=cluster.node_env)
    cluster.wait_for_nodes()
    run_dir = tmp_path / "run"
    budget = 100
    proc = start_driver(cluster, run_dir, workers=6, budget=budget, sleep=0.3)
    try:
        per_node = wait_for(run_dir, 15)
        assert len(per_node) == 4 and sum(per_node.values()) == 6, per_node      # SPREAD: every node
        label = next(k for k in per_node if k.endswith(doomed.node_id[:8]))
        cluster.remove_node(doomed, allow_graceful=False)
        summary, err = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "6 Ray worker(s) ready on 4 node(s)" in err
    assert summary["finished"] and summary["n_candidates"] == budget
    assert summary["workers_replaced"] == per_node[label] and label not in summary["workers_per_node"]
    assert sum(summary["workers_per_node"].values()) == 6          # replaced on the live nodes
    stored = rows(run_dir)
    lost = [r for r in stored if r[1] == "worker"]
    assert lost and all("left the cluster" in r[2] for r in lost), lost
    assert len(lost) <= per_node[label]                 # only the jobs in flight on that node
    for cid, _, _, job_seed, _ in lost:                 # each ran again on a live node
        assert any(r[3] == job_seed and r[0] > cid and r[1] != "worker" for r in stored), job_seed


def test_losing_the_head_is_a_clear_error_and_the_run_resumes(cluster, tmp_path):
    """Runs last: it takes the module's cluster down."""
    run_dir = tmp_path / "run"
    proc = start_driver(cluster, run_dir, workers=4, budget=200, sleep=0.3)
    try:
        wait_for(run_dir, 10)
        address = cluster.address
        cluster.remove_node(cluster.head_node, allow_graceful=False)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    for node in list(cluster.worker_nodes):     # headless nodes only wait for Ray's 60 s limit: free the CPUs
        cluster.remove_node(node, allow_graceful=False)
    assert proc.returncode == 2, err[-2000:]
    assert "lost the Ray cluster at" in err and f"--resume {run_dir}" in err, err[-2000:]
    before = rows(run_dir)
    assert json.loads((run_dir / "summary.json").read_text())["finished"] is False
    # The dead head's address stays in RAY_TMPDIR/ray_current_cluster: Ray alone would join it ...
    assert (cluster.tmp / "ray" / "ray_current_cluster").read_text().strip().endswith(address.split(":")[-1])
    plain = subprocess.run([sys.executable, "-c", "import ray; ray.init(num_cpus=1)"], cwd=cluster.tmp,
                           env=driver_env(cluster), capture_output=True, text=True, timeout=120)
    assert plain.returncode != 0 and "must not be provided" in plain.stderr, plain.stderr[-2000:]
    # ... the resume without an address starts its own Ray instead, and goes on
    resumed = subprocess.run([sys.executable, str(DRIVER), "local", str(run_dir), "--workers", "2", "--budget",
                              str(len(before) + 6), "--sleep", "0", "--resume"], cwd=cluster.tmp,
                             env=driver_env(cluster), capture_output=True, text=True, timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = rows(run_dir)
    assert after[:len(before)] == before and len(after) == len(before) + 6


def wait_for(run_dir, n_stored, timeout_s=120):
    """The run's workers per node once it has stored *n_stored* candidates."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        time.sleep(0.5)
        try:
            per_node = json.loads((run_dir / "summary.json").read_text())["workers_per_node"]
            if len(rows(run_dir)) >= n_stored:
                return per_node
        except (OSError, ValueError, KeyError, sqlite3.Error):
            continue
    raise AssertionError(f"the run in {run_dir} did not get going")
