"""The adversarial corpus: every hostile or broken candidate is rejected by the right gate,
with the right reason, within the time budget, leaving no processes or files behind."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from kernelfoundry.evaluate import pipeline
from kernelfoundry.sandbox import process as sandbox
from kernelfoundry.evaluate.pipeline import default_limits, verify
from kernelfoundry.sandbox.process import fork_server_pids, shutdown_fork_servers, with_limits
from kernelfoundry.task import load_task

HERE = Path(__file__).resolve().parent
TASKS = HERE.parents[1] / "experiments" / "tasks"
EXPECTED = yaml.safe_load((HERE / "expected.yaml").read_text())
#: A guard against a hang or a runaway candidate, not a speed target (that is bench_verifier's job):
#: the corpus takes about 150 s on 2 quiet cores and about 320 s beside another test worker.
BUDGET_S = 900.0
#: The same guard per candidate (the slowest takes about 15 s on 2 quiet cores).
CANDIDATE_BUDGET_S = 90.0


def _processes_of(uids: set[int]) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/status") as f:
                    uid = next(int(line.split()[1]) for line in f if line.startswith("Uid:"))
            except (OSError, StopIteration, ValueError):
                continue
            if uid in uids:
                pids.append(int(entry.name))
    return pids


def _children_of(parents: set[int]) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    text = f.read()
            except OSError:
                continue
            if int(text[text.rfind(b")") + 2:].split()[1]) in parents:
                found.append(int(entry.name))
    return found


def _files_of(uids: set[int]) -> list[str]:
    found = []
    for top in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            for entry in os.scandir(top):
                if entry.stat(follow_symlinks=False).st_uid in uids:
                    found.append(entry.path)
        except OSError:
            continue
    return found


#: Honest kernels verified with the corpus: the twins a passing trick is scored against, and the honest
#: twins (``honest``) of tricks that must be refused at a gate (each must pass).
TWINS = sorted({e["twin"] for e in EXPECTED.values() if "twin" in e}
               | {e["honest"] for e in EXPECTED.values() if "honest" in e})
#: Sandbox wall limit per verification (s): 24 unless an entry asks for more (its twin gets the same).
WALL_S = 24.0
WALL = {**{t: max((e.get("wall_s", WALL_S) for e in EXPECTED.values() if t in (e.get("twin"), e.get("honest"))),
                 default=WALL_S) for t in TWINS},
        **{rel: e.get("wall_s", WALL_S) for rel, e in EXPECTED.items()}}


def test_corpus_is_complete():
    files = {str(p.relative_to(HERE)) for p in HERE.glob("*/*.py")}
    assert files == set(EXPECTED), (sorted(files - set(EXPECTED)), sorted(set(EXPECTED) - files))
    assert all((HERE / twin).is_file() for twin in TWINS)
    assert all(("gate" in e) != ("twin" in e) for e in EXPECTED.values())
    assert len(EXPECTED) >= 25
    assert sum(1 for e in EXPECTED.values() if e.get("runtime")) >= 10, "too few candidates reach runtime"


@pytest.fixture(scope="module")
def corpus_results():
    """Verify the whole corpus (2 threads, one fork server each) inside a private temp root,
    recording every sandbox run to audit what it left behind."""
    outcomes = []

    def recording_run(*args, **kwargs):
        outcome = sandbox.run_sandboxed(*args, **kwargs)
        outcomes.append(outcome)
        return outcome

    patch = pytest.MonkeyPatch()
    patch.setattr(pipeline, "run_sandboxed", recording_run)
    tasks = {p.name: load_task(TASKS / f"{p.name}.yaml") for p in HERE.iterdir() if p.is_dir()
             and (TASKS / f"{p.name}.yaml").exists()}
    private_tmp = tempfile.mkdtemp(prefix="kf-adversarial-")
    os.chmod(private_tmp, 0o711)
    old_tempdir = tempfile.tempdir
    tempfile.tempdir = private_tmp

    def one(rel: str):
        task = tasks[rel.split("/")[0]]
        limits = with_limits(default_limits(task, WALL[rel]), rss_bytes=768 << 20)
        start = time.monotonic()
        result = verify(task, (HERE / rel).read_text(), ["h100"], limits=limits)
        return rel, result, time.monotonic() - start

    start = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = {rel: (res, secs) for rel, res, secs in pool.map(one, sorted(EXPECTED) + TWINS)}
        elapsed = time.monotonic() - start
        servers = set(fork_server_pids())
        uids = {o.uid for o in outcomes if o.uid is not None}
        # torch in this (driver) process may make its own cache dir there when the model profiles a
        # reference; only what the sandboxed children leave counts
        leftovers = {"tmp_entries": [e for e in os.listdir(private_tmp) if not e.startswith("torchinductor_")], "server_children": _children_of(servers),
                     "uid_processes": _processes_of(uids), "uid_files": _files_of(uids),
                     "children_alive": [o.pid for o in outcomes if _processes_of({o.uid}) or (
                         o.uid is None and os.path.exists(f"/proc/{o.pid}"))],
                     "runs": len(outcomes)}
    finally:
        tempfile.tempdir = old_tempdir
        patch.undo()
    shutdown_fork_servers()
    leftovers["servers_alive"] = [pid for pid in servers if os.path.exists(f"/proc/{pid}")
                                  and b"Z" not in open(f"/proc/{pid}/stat", "rb").read().split()[2:3]]
    shutil.rmtree(private_tmp)
    return results, elapsed, leftovers


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_candidate_rejected_by_the_right_gate(corpus_results, rel):
    results, _, _ = corpus_results
    result, seconds = results[rel]
    expected = EXPECTED[rel]
    if "twin" in expected:              # rejected, or scored within `within` of the honest twin
        twin, _ = results[expected["twin"]]
        assert twin.passed, f"the honest twin {expected['twin']} failed: {twin.reason}"
        if result.passed:
            assert result.objective <= twin.objective * (1 + expected["within"]), (
                f"{rel} scores {result.objective:.4g}, its honest twin {twin.objective:.4g}")
        return
    if "honest" in expected:            # the honest way of doing the same must pass
        twin, _ = results[expected["honest"]]
        assert twin.passed, f"the honest twin {expected['honest']} failed: {twin.reason}"
    assert not result.passed, f"{rel} passed the verifier"
    assert result.gate == expected["gate"], f"{rel}: gate {result.gate}, reason: {result.reason}"
    reasons = expected["reason"] if isinstance(expected["reason"], list) else [expected["reason"]]
    assert any(r in result.reason for r in reasons), f"{rel}: reason was: {result.reason}"
    if expected.get("runtime"):
        assert result.gates[0].name == "hack" and result.gates[0].passed, f"{rel} should pass the static gate"
    assert seconds < CANDIDATE_BUDGET_S, f"{rel} took {seconds:.1f} s"


def test_corpus_runs_in_budget_and_leaves_machine_clean(corpus_results):
    _, elapsed, leftovers = corpus_results
    assert elapsed < BUDGET_S, f"corpus took {elapsed:.1f} s"
    assert leftovers["tmp_entries"] == [], "sandbox temp dirs were not removed"
    assert leftovers["server_children"] == [], "sandboxed children outlived their job"
    assert leftovers["runs"] >= 15, "the runtime candidates did not reach the sandbox"
    assert leftovers["uid_processes"] == [], "processes of sandbox uids are still running"
    assert leftovers["children_alive"] == [], "sandboxed children are still running"
    assert leftovers["uid_files"] == [], "the sandbox left files in world-writable directories"
    assert leftovers["servers_alive"] == [], "fork servers survived shutdown"
    assert not os.path.exists("/tmp/kf_adversarial_marker")
