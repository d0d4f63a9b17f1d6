"""The sandbox: every misbehaving child ends in a record, the machine stays clean."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from kernelfoundry.sandbox.process import (SandboxLimits, run_sandboxed,
                                            shutdown_fork_servers, sweep_stale_dirs)
from kernelfoundry.sandbox.procfs import sandbox_pids as _sandbox_pids

# A job module run inside the sandbox: behaviour picked by payload["do"].
PROBE = r'''
import json, os, sys, time


def main():
    inp, out = sys.argv[1:3]
    p = json.load(open(inp))
    do = p["do"]
    print("pid", os.getpid(), flush=True)
    if do == "ok":
        import torch
        print("hello from the child")
        progress = os.environ["KF_SANDBOX_PROGRESS"]
        open(progress, "w").write("load\ncorrectness\n")
        json.dump({"echo": p["value"], "uid": os.getuid(), "threads": torch.get_num_threads(),
                   "interpret": os.environ.get("TRITON_INTERPRET"), "cwd": os.getcwd(),
                   "proxy": os.environ.get("http_proxy") or os.environ.get("HTTPS_PROXY")}, open(out, "w"))
    elif do == "sleep":
        time.sleep(1000)
    elif do == "spin":
        while True:
            pass
    elif do == "memory":
        import torch
        keep = []
        while True:
            keep.append(torch.ones(25_000_000))
    elif do == "tiles":                # one 32 MB memfd tile mapped 64 times (2 GB), every page read
        import mmap
        fd = os.memfd_create("tile")
        os.ftruncate(fd, 32 << 20)
        maps = [mmap.mmap(fd, 32 << 20, flags=mmap.MAP_SHARED) for _ in range(64)]
        total = 0
        for m in maps:
            for off in range(0, 32 << 20, 4096):
                total += m[off]
        time.sleep(0.5)                # a few watchdog polls with every page mapped
        json.dump({"mapped": len(maps), "total": total}, open(out, "w"))
    elif do == "shared_memory":        # shared anonymous memory, written: real memory all the same
        import mmap
        keep = []
        while True:
            m = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
            m.write(b"x" * (64 << 20))
            keep.append(m)
    elif do == "print":
        while True:
            print("x" * 10000)
    elif do == "burst":
        sys.stdout.write("y" * (3 << 20))
        sys.stdout.flush()
        sys.exit(1)
    elif do == "exit":
        sys.exit(3)
    elif do == "os_exit":
        os._exit(0)
    elif do == "segfault":
        import ctypes
        ctypes.string_at(0)
    elif do == "garbage":
        open(out, "w").write("{not json")
    elif do == "escape":
        res = {}
        try:
            pid = os.fork()
            if pid == 0:
                time.sleep(1000)
            res["fork"] = "forked"
        except OSError as exc:
            res["fork"] = f"refused: {exc}"
        import threading
        n = 0
        try:
            for _ in range(5000):
                threading.Thread(target=time.sleep, args=(3,), daemon=True).start()
                n += 1
        except RuntimeError:
            pass
        res["threads"] = n
        import socket
        try:
            socket.socket()
            res["socket"] = "opened"
        except OSError as exc:
            res["socket"] = f"refused: {exc}"
        try:
            import subprocess
            subprocess.run(["true"])
            res["exec"] = "ran"
        except OSError as exc:
            res["exec"] = f"refused: {exc}"
        for name, path in p["paths"].items():
            try:
                with open(path, "w") as f:
                    f.write("pwned")
                res[name] = "written"
            except OSError as exc:
                res[name] = f"refused: {exc}"
        try:
            os.kill(1, 0)
            res["kill"] = "sent"
        except OSError as exc:
            res["kill"] = f"refused: {exc}"
        json.dump(res, open(out, "w"))


if __name__ == "__main__":
    main()
'''


@pytest.fixture(scope="module")
def probe(job_module):
    """The probe module, where the child can import it (tests/conftest.py)."""
    return job_module(PROBE, "kf_probe")


FAST = SandboxLimits(wall_s=20.0, rss_bytes=1 << 30)


def child_pid(outcome) -> int:
    return int(re.search(r"pid (\d+)", outcome.output_tail).group(1))


def assert_gone(outcome) -> None:
    pid = child_pid(outcome)
    assert not os.path.exists(f"/proc/{pid}") or _sandbox_pids(pid, None) == []


@pytest.mark.parametrize("mode", ["fork", "spawn"])
def test_ok_job_returns_result_output_and_progress(probe, mode):
    out = run_sandboxed(probe, {"do": "ok", "value": [1, "two"]}, FAST, mode=mode)
    assert out.ok and out.reason == "" and out.exit_code == 0, out
    assert out.result["echo"] == [1, "two"]
    assert out.result["threads"] == 1 and out.result["interpret"] == "1" and out.result["proxy"] is None
    assert out.result["cwd"].endswith("/job")
    assert "hello from the child" in out.output_tail
    assert out.progress == "correctness"
    assert out.mode == mode
    assert "rlimits" in out.isolation
    if os.geteuid() == 0:
        assert out.result["uid"] != 0 and any(n.startswith("uid ") for n in out.isolation)
    assert not os.path.exists(out.result["cwd"]), "temp dir must be removed"


def test_timeout_kills_and_reports(probe):
    start = time.monotonic()
    out = run_sandboxed(probe, {"do": "sleep"}, SandboxLimits(wall_s=1.0))
    assert time.monotonic() - start < 4
    assert not out.ok and out.killed_by == "wall" and out.reason == "timed out after 1 s"
    assert out.signal == 9
    assert_gone(out)


def test_cpu_limit(probe):
    out = run_sandboxed(probe, {"do": "spin"}, SandboxLimits(wall_s=30.0, cpu_s=1.0))
    assert not out.ok
    assert "CPU" in out.reason, out.reason
    assert out.wall_s < 10


def test_memory_bomb_is_killed(probe):
    out = run_sandboxed(probe, {"do": "memory"}, SandboxLimits(wall_s=30.0, rss_bytes=512 << 20))
    assert not out.ok and out.killed_by == "memory", out
    assert out.reason == "killed: memory over 512 MB"
    assert out.peak_rss_bytes > 400 << 20


def test_a_tile_mapped_many_times_counts_once(probe):
    """2 GB of mappings of one 32 MB tile (the trace's tiled inputs) is 32 MB of memory: not killed at 512 MB,
    though VmRSS shows every mapping."""
    out = run_sandboxed(probe, {"do": "tiles"}, SandboxLimits(wall_s=60.0, rss_bytes=512 << 20))
    assert out.ok, out.reason
    assert out.result == {"mapped": 64, "total": 0}


def test_shared_anonymous_memory_is_counted(probe):
    out = run_sandboxed(probe, {"do": "shared_memory"}, SandboxLimits(wall_s=30.0, rss_bytes=512 << 20))
    assert not out.ok and out.killed_by == "memory", out


def test_huge_output_is_capped(probe):
    limits = SandboxLimits(wall_s=30.0, output_bytes=1 << 20, tail_bytes=4096)
    out = run_sandboxed(probe, {"do": "print"}, limits)
    assert not out.ok and out.killed_by == "output"
    assert out.reason == "killed: printed more than 1 MB of output"
    assert len(out.output_tail) <= 4096


def test_output_over_the_limit_is_caught_even_when_the_child_ends_between_polls(probe):
    # A poll period longer than the job: the watchdog never sees it running, only its output.
    limits = SandboxLimits(wall_s=30.0, output_bytes=1 << 20, tail_bytes=4096, poll_s=20.0)
    out = run_sandboxed(probe, {"do": "burst"}, limits)
    assert not out.ok and out.killed_by == "output", out
    assert out.reason == "killed: printed more than 1 MB of output"
    assert out.output_bytes > 3 << 20 and out.wall_s < 20


@pytest.mark.parametrize("do,reason", [
    ("exit", "exited with code 3 before writing a result"),
    ("os_exit", "exited with code 0 without writing a result"),
    ("segfault", "crashed with signal 11 (SIGSEGV)"),
    ("garbage", "wrote an unreadable result"),
])
def test_crashes_become_reasons(probe, do, reason):
    out = run_sandboxed(probe, {"do": do}, FAST)
    assert not out.ok and out.result is None
    assert out.reason.startswith(reason), out.reason


def res_nested_gone(out, nested: str) -> bool:
    """A root driver's child sees none of the host's /tmp (a private one instead); without root the
    child is the user and its file stays the user's."""
    if out.uid is not None:
        assert out.result["nested"].startswith("refused"), out.result["nested"]
    else:
        assert out.result["nested"] == "written", out.result["nested"]
    return out.uid is None or not os.path.exists(nested)


def test_escapes_are_refused_and_nothing_is_left(probe, tmp_path):
    marker = f"/tmp/kf_sandbox_escape_{uuid.uuid4().hex}"
    shared = f"/tmp/kf_sandbox_shared_{uuid.uuid4().hex}"       # a nested world-writable directory
    os.makedirs(f"{shared}/logs")
    os.chmod(shared, 0o777)
    os.chmod(f"{shared}/logs", 0o777)
    nested = f"{shared}/logs/left_behind"
    paths = {"tmp": marker, "nested": nested, "repo": os.path.join(os.path.dirname(__file__), "PWNED")}
    try:
        out = run_sandboxed(probe, {"do": "escape", "paths": paths}, FAST)
        assert res_nested_gone(out, nested)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    assert out.ok, out
    res = out.result
    if "seccomp" in out.isolation:
        assert res["fork"].startswith("refused") and res["exec"].startswith("refused")
        assert res["socket"].startswith("refused") and res["kill"].startswith("refused")
    assert res["threads"] < FAST.max_threads
    if os.geteuid() == 0:                    # the child runs as a throwaway uid: no writes in the repo
        assert res["repo"].startswith("refused")
        assert not os.path.exists(paths["repo"])
    elif os.path.exists(paths["repo"]):      # without root only the static gate guards the user's files
        os.unlink(paths["repo"])
    assert not os.path.exists(marker), "files the sandbox left in /tmp must be removed"
    assert_gone(out)


def test_fork_server_is_reused_and_fast(probe):
    run_sandboxed(probe, {"do": "ok", "value": 0}, FAST, mode="fork")
    start = time.monotonic()
    for i in range(5):
        out = run_sandboxed(probe, {"do": "ok", "value": i}, FAST, mode="fork")
        assert out.ok and out.result["echo"] == i and out.mode == "fork"
    assert (time.monotonic() - start) / 5 < 0.5


DRIVER = r'''
import sys, threading, time
from kernelfoundry.sandbox.process import SandboxLimits, fork_server_pids, run_sandboxed
threading.Thread(target=run_sandboxed, args=(sys.argv[1], {"do": "sleep"}, SandboxLimits(wall_s=600)),
                 daemon=True).start()
while not fork_server_pids():
    time.sleep(0.05)
time.sleep(1.0)
print(fork_server_pids()[0], flush=True)
time.sleep(600)
'''


def test_killing_the_driver_kills_server_and_child(probe):
    """A driver (e.g. a Ray worker) SIGKILLed mid-job leaves no server or sandboxed child behind."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(__import__("kernelfoundry").REPO_DIR), os.environ.get("PYTHONPATH")) if p))
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, probe], stdout=subprocess.PIPE, text=True, env=env)
    try:
        server = int(driver.stdout.readline())
        children = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
                    if _parent_of(pid) == server]
        assert children, "the sleeping job should be running under the server"
    finally:
        driver.kill()
        driver.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in [server, *children]):
        time.sleep(0.1)
    assert not any(_alive(p) for p in [server, *children])
    import tempfile
    stale = [d for d in os.listdir(tempfile.gettempdir()) if d.startswith(f"kf-sandbox-{driver.pid}-")]
    assert stale, "a killed driver cannot clean up; the next driver's sweep does"
    removed = sweep_stale_dirs()
    assert all(os.path.join(tempfile.gettempdir(), d) in removed for d in stale)
    assert not any(os.path.exists(os.path.join(tempfile.gettempdir(), d)) for d in stale)


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    return int(text[text.rfind(b")") + 2:].split()[1])


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return False
    return text[text.rfind(b")") + 2:].split()[0] != b"Z"


def test_interrupted_job_kills_child_and_resets_server(probe, monkeypatch):
    """An exception in the driver mid-job (e.g. Ctrl-C) kills the child and drops that fork server."""
    from kernelfoundry.sandbox import process as sandbox
    run_sandboxed(probe, {"do": "ok", "value": 0}, FAST, mode="fork")          # a warm server
    started = []
    real_watch = sandbox._watch

    def interrupted(child, *args):
        started.append(child.pid)
        child.wait(0.5)
        raise KeyboardInterrupt

    monkeypatch.setattr(sandbox, "_watch", interrupted)
    before = set(sandbox.fork_server_pids())
    with pytest.raises(KeyboardInterrupt):
        run_sandboxed(probe, {"do": "sleep"}, FAST, mode="fork")
    monkeypatch.setattr(sandbox, "_watch", real_watch)
    assert started and not _alive(started[0])
    assert len(before - set(sandbox.fork_server_pids())) == 1
    out = run_sandboxed(probe, {"do": "ok", "value": 7}, FAST, mode="fork")
    assert out.ok and out.result["echo"] == 7


def test_a_server_started_from_a_short_lived_thread_outlives_it(probe):
    """A server dies with the thread that forked it (PDEATHSIG): one started by a verify call's
    trace thread must not be killed when that thread ends, under the next job that takes it."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from kernelfoundry.sandbox import process as sandbox
    shutdown_fork_servers()
    with ThreadPoolExecutor(max_workers=1) as pool:
        out = pool.submit(run_sandboxed, probe, {"do": "ok", "value": 1}, FAST, mode="fork").result()
    assert out.ok and out.mode == "fork"
    servers = sandbox.fork_server_pids()
    assert len(servers) == 1
    time.sleep(0.5)                                  # a PDEATHSIG kill would have landed by now
    assert _alive(servers[0])
    done = threading.Event()
    threading.Thread(target=done.set).start()        # another short-lived thread comes and goes
    done.wait()
    out = run_sandboxed(probe, {"do": "ok", "value": 2}, FAST, mode="fork")
    assert out.ok and out.result["echo"] == 2 and out.mode == "fork"
    assert sandbox.fork_server_pids() == servers, "the same server served both jobs"


def test_a_server_that_dies_while_held_is_left_to_its_holder(probe):
    """Another thread looking for a server must not close one that a job holds (its write then
    failed with 'write to closed file'); the holder gets a ForkServerError and spawns instead."""
    import signal as _signal
    from kernelfoundry.sandbox import process as sandbox
    from kernelfoundry.sandbox.forkserver import ForkServerError
    shutdown_fork_servers()
    run_sandboxed(probe, {"do": "ok", "value": 0}, FAST, mode="fork")        # one warm, idle server
    held = sandbox._acquire_fork_server(probe)
    assert held is not None
    try:
        os.kill(held.proc.pid, _signal.SIGKILL)
        held.proc.wait()
        other = sandbox._acquire_fork_server(probe)                         # starts a second one
        assert other is not None and other is not held
        other.lock.release()
        assert not held.proc.stdin.closed, "a server another thread holds was closed under it"
        with pytest.raises(ForkServerError):
            held.start_job({}, "/nonexistent")
        held.close()
        with pytest.raises(ForkServerError):                                # closed: still no ValueError
            held.start_job({}, "/nonexistent")
    finally:
        held.lock.release()
    out = run_sandboxed(probe, {"do": "ok", "value": 3}, FAST, mode="fork")
    assert out.ok and out.result["echo"] == 3
    assert held.proc.pid not in sandbox.fork_server_pids()


ISOLATION_PROBE = r'''
import ctypes, json, os, sys
out = {"root": sorted(os.listdir("/")), "caps": [l.split()[1] for l in open("/proc/self/status")
                                                 if l.startswith("CapEff")][0]}
for path in ("/run/lock", "/dev/shm", "/var/tmp", "/home", "/root", "/etc/passwd"):
    out[path] = os.path.exists(path) and os.access(path, os.W_OK)
out["visible"] = {p: os.path.exists(p) for p in json.load(open(sys.argv[1]))["paths"]}
libc = ctypes.CDLL(None, use_errno=True)
out["shmget"] = libc.shmget(0, 4096, 0o1600)
json.dump(out, open(sys.argv[2], "w"))
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and the minimal root need a root driver")
def test_root_child_sees_a_minimal_read_only_world(tmp_path_factory):
    """No capabilities, no writable shared directory, no SysV IPC, nothing of the host but the
    interpreter, the venv and the package: the repository's run stores and the driver's files are
    invisible (the sandbox used to keep CAP_DAC_READ_SEARCH and saw everything)."""
    directory = tmp_path_factory.mktemp("isoprobe")
    os.chmod(directory, 0o755)
    os.chmod(directory.parent, 0o755)
    name = f"kf_isoprobe_{uuid.uuid4().hex[:8]}"
    (directory / f"{name}.py").write_text(ISOLATION_PROBE)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(directory), old) if p)
    secret = tmp_path_factory.mktemp("secret") / "token"
    secret.write_text("s3cret")
    from kernelfoundry import REPO_DIR
    hidden = [str(secret), str(REPO_DIR / "README.md"), str(REPO_DIR / "archives"), "/etc/shadow"]
    try:
        for mode in ("fork", "spawn"):
            out = run_sandboxed(name, {"paths": hidden}, FAST, mode=mode)
            assert out.ok, out
            res = out.result
            assert int(res["caps"], 16) == 0
            assert not any(res[p] for p in ("/run/lock", "/dev/shm", "/var/tmp", "/home", "/root", "/etc/passwd"))
            assert res["visible"] == {p: False for p in hidden}
            assert res["shmget"] == -1
            assert "minimal root" in out.isolation and "ipcns" in out.isolation
    finally:
        shutdown_fork_servers()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def test_isolation_check_can_fail():
    """The child's start-up check reports what does not hold (here: run unconfined, in the driver)."""
    from kernelfoundry.sandbox.boot import isolation_problems
    canary = __file__
    problems = isolation_problems({"canary": canary})
    assert any("visible" in p for p in problems)
    if os.geteuid() == 0:
        assert "still root" in problems and any("capabilities" in p for p in problems)


def test_a_child_mid_exit_counts_no_memory():
    """An exiting child has no smaps_rollup: its memory is read afresh (0 once gone), never the
    VmRSS of a moment earlier, which counted every mapping of a tile (a CI run killed an honest
    child this way)."""
    from kernelfoundry.sandbox.procfs import physical_bytes as _physical_bytes, proportional_bytes as _proportional_bytes
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.01)
    try:
        assert _proportional_bytes(child.pid) is None
        assert _physical_bytes(child.pid) == 0
        assert _physical_bytes(os.getpid()) > 0
    finally:
        child.wait()


def test_two_servers_start_side_by_side(monkeypatch):
    """A new server starts outside the pool's lock: a verify's check and trace jobs, the first of a
    process, start their servers together (each imports torch and Triton: seconds), not in turn."""
    import threading
    from kernelfoundry.sandbox import process as sandbox

    class Started:
        def __init__(self):
            self.lock = threading.Lock()
            self.closed = False

        def alive(self):
            return not self.closed

        def close(self):
            self.closed = True

    both_starting = threading.Barrier(2, timeout=20)

    def start(preload, env):
        both_starting.wait()          # returns only once the other caller is starting one too
        return Started()

    monkeypatch.setattr(sandbox, "_start_fork_server", start)
    module = f"kf_side_by_side_{uuid.uuid4().hex[:8]}"
    got, errors = [], []

    def acquire():
        try:
            got.append(sandbox._acquire_fork_server(module))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=acquire) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors, errors
        assert len(got) == 2 and all(isinstance(s, Started) for s in got) and got[0] is not got[1]
        assert all(s.lock.locked() for s in got)
        assert sandbox._STARTING.get(module, 0) == 0
    finally:
        with sandbox._SERVERS_LOCK:
            for server in sandbox._SERVERS.pop(module, []):
                server.close()


def test_prestart_starts_servers_in_the_background_up_to_the_count_past_an_idle_one(monkeypatch):
    """A verify asks for the compile job's server while its trace runs: the call returns at once, and
    only the servers missing from the count start (an idle one counts, it is not taken)."""
    import threading
    from kernelfoundry.sandbox import process as sandbox

    release = threading.Event()
    started = []

    class Started:
        def __init__(self):
            self.lock, self.closed = threading.Lock(), False
            self.proc = type("P", (), {"pid": -1})()

        def alive(self):
            return not self.closed

        def close(self):
            self.closed = True

    def start(preload, env):
        assert release.wait(20)       # a server's imports take seconds: the caller must not wait for them
        started.append(Started())
        return started[-1]

    monkeypatch.setattr(sandbox, "_start_fork_server", start)
    module = f"kf_prestart_{uuid.uuid4().hex[:8]}"
    key = sandbox._pool_key(module, None)
    try:
        sandbox.prestart_fork_servers(module, count=1)
        sandbox.prestart_fork_servers(module, count=1)          # one is starting: nothing more
        assert sandbox._STARTING[key] == 1 and sandbox.idle_fork_servers(module) == 0
        release.set()
        deadline = time.monotonic() + 20
        while sandbox.idle_fork_servers(module) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sandbox.idle_fork_servers(module) == 1 and len(started) == 1
        sandbox.prestart_fork_servers(module, count=3)          # the idle one counts: two more
        while sandbox.idle_fork_servers(module) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sandbox.idle_fork_servers(module) == 3 and len(started) == 3 and sandbox._STARTING[key] == 0
        held = sandbox._acquire_fork_server(module)             # a job takes one of them, none starts
        assert held is started[0] and len(started) == 3 and sandbox.idle_fork_servers(module) == 2
        held.lock.release()
    finally:
        with sandbox._SERVERS_LOCK:
            for server in sandbox._SERVERS.pop(key, []):
                server.close()
