"""Run a job module in a confined child process and always get a record back.

``run_sandboxed(module, payload, limits)`` runs ``python -m module IN.json OUT.json``
in a fresh child (forked from a pre-warmed fork server, or spawned) that:

* has its own session and process group, cwd and HOME in a private temp dir,
  a minimal environment (``TRITON_INTERPRET=1``, one OMP/MKL thread, no proxies);
* is confined by hard rlimits (address space, CPU seconds, processes/threads,
  file size, no core dumps) and, on Linux x86_64, a seccomp filter (no fork,
  exec, sockets, ptrace, signals to others); as root it also gets a private
  network namespace and a throwaway uid (see :mod:`.boot`);
* is watched by the caller for wall time, real memory (RSS: the address-space
  limit must stay loose because target-shape tensors are allocated but mostly
  untouched), output volume and thread count, and SIGKILLed with its whole
  session on any limit.

``gpu=True`` (the device job only) adds the host's GPU device nodes and driver pieces
to the minimal root (:mod:`.devices`); ``broker=MODULE`` a pre-seccomp broker, such as the
device job's ptxas one (:mod:`.broker`).

Design choices and measurements are in ``docs/verifier.md``.
"""

from __future__ import annotations

import atexit
import json
import os
import random
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..safe_io import read_regular
from .forkserver import ForkServer, ForkServerError
from .procfs import count_user_tasks, kill_all, physical_bytes, sandbox_pids, status_numbers

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
_WORLD_WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


class SandboxIsolationError(RuntimeError):
    """The child's confinement check failed: no job may run on this machine as configured."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits for one sandboxed run (keyword-only; all enforced with SIGKILL)."""

    wall_s: float = 60.0                   # wall-clock seconds
    cpu_s: float | None = None             # CPU seconds (RLIMIT_CPU); default: wall_s
    rss_bytes: int = 4 * GiB               # real memory (PSS past VmRSS), summed over the session (watchdog)
    address_space_bytes: int = 16 * GiB    # RLIMIT_AS: virtual memory, a coarse backstop
    max_threads: int = 64                  # RLIMIT_NPROC for the sandbox uid + watchdog
    file_bytes: int = 64 * MiB             # RLIMIT_FSIZE: largest file the child may write
    output_bytes: int = 8 * MiB            # stdout+stderr volume before the child is killed
    tail_bytes: int = 64 * KiB             # how much of the output's end the record keeps
    poll_s: float = 0.05                   # watchdog period

    def rlimits(self, *, nproc: int | None) -> dict[str, Any]:
        cpu = int(self.cpu_s if self.cpu_s is not None else self.wall_s) + 1
        out = {"RLIMIT_AS": int(self.address_space_bytes), "RLIMIT_CPU": [cpu, cpu + 2],
               "RLIMIT_FSIZE": int(self.file_bytes), "RLIMIT_CORE": 0}
        if nproc is not None:
            out["RLIMIT_NPROC"] = int(nproc)
        return out


@dataclass
class SandboxOutcome:
    """What happened to one sandboxed run.  ``ok``: exit 0 and a readable result."""

    ok: bool
    result: dict[str, Any] | None
    reason: str                            # "" when ok; else e.g. "timed out after 30 s"
    exit_code: int | None                  # None when ended by a signal
    signal: int | None = None
    killed_by: str | None = None           # "wall" | "memory" | "output" | "threads" | "cancelled" | None
    output_tail: str = ""
    output_bytes: int = 0
    wall_s: float = 0.0
    peak_rss_bytes: int = 0
    progress: str | None = None            # last line the child wrote to $KF_SANDBOX_PROGRESS
    mode: str = "spawn"                    # "fork" (fork server) or "spawn"
    isolation: list[str] = field(default_factory=list)
    pid: int | None = None                 # the child's pid (gone when the record is returned)
    uid: int | None = None                 # the throwaway uid it ran as (root drivers only)
    files: dict[str, bytes] = field(default_factory=dict)   # extra result files asked for, as written

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("result")
        d.pop("files")
        return d


def sandbox_env() -> dict[str, str]:
    """The child's environment: minimal, deterministic, no proxies or credentials."""
    from .. import REPO_DIR
    path = os.pathsep.join(p for p in (str(REPO_DIR), os.environ.get("PYTHONPATH", "")) if p)
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONPATH": path,
            "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
            "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "TORCH_NUM_THREADS": "1"}


# ---------------------------------------------------------------- fork servers
# Per job module, a pool of servers: a job takes an idle one (its lock) or starts
# another, so concurrent callers in one process (threads) run in parallel.
MAX_SERVERS_PER_MODULE = 4
_SERVERS: dict[str, list[ForkServer]] = {}
_STARTING: dict[str, int] = {}          # servers being started, per pool (they count towards its size)
_SERVER_FAILURES: dict[str, str] = {}
_SERVERS_LOCK = threading.Lock()


def _pool_key(module: str, env: dict[str, str] | None) -> str:
    return module if not env else module + "|" + json.dumps(sorted(env.items()))


_LAUNCHER: ThreadPoolExecutor | None = None


def _start_fork_server(preload: tuple[str, ...], env: dict[str, str]) -> ForkServer:
    """Start a server from one thread that lives as long as this process.

    The server dies with the thread that forked it (PR_SET_PDEATHSIG follows the
    parent *thread*): started from a short-lived worker thread (a verify call's
    trace job, a test's pool) it was SIGKILLed when that thread ended, killing the
    job it was running and racing other threads that held it.
    """
    global _LAUNCHER
    if threading.current_thread() is threading.main_thread():
        return ForkServer(preload, env)
    with _SERVERS_LOCK:
        if _LAUNCHER is None:           # its threads never exit (a pool's idle threads wait for work)
            _LAUNCHER = ThreadPoolExecutor(max_workers=2 * MAX_SERVERS_PER_MODULE,
                                           thread_name_prefix="kf-fork-server-launcher")
        launcher = _LAUNCHER
    return launcher.submit(ForkServer, preload, env).result()


def _acquire_fork_server(module: str, env: dict[str, str] | None = None) -> ForkServer | None:
    """An idle live server for *module* (its env: *env* over sandbox_env()) with its lock held, or None.

    A new server starts outside the pool's lock (its imports take seconds): a verify's check and
    trace jobs, the first of a process, start their two servers side by side, not one after the other."""
    key = _pool_key(module, env)
    with _SERVERS_LOCK:
        pool = _SERVERS.setdefault(key, [])
        for server in list(pool):
            if not server.lock.acquire(blocking=False):
                continue                      # busy; if it died, its holder drops it
            if server.alive():
                return server
            pool.remove(server)
            server.close()
            server.lock.release()
        if key in _SERVER_FAILURES or len(pool) + _STARTING.get(key, 0) >= MAX_SERVERS_PER_MODULE:
            return None
        _STARTING[key] = _STARTING.get(key, 0) + 1
    return _new_fork_server(key, pool, module, env)


def _new_fork_server(key: str, pool: list[ForkServer], module: str, env: dict[str, str] | None) -> ForkServer | None:
    """A new server for *pool* (counted in ``_STARTING[key]`` by the caller), its lock held, or None."""
    try:
        server = _start_fork_server((module,), {**sandbox_env(), **(env or {})})
    except (ForkServerError, OSError, ValueError) as exc:
        with _SERVERS_LOCK:
            _SERVER_FAILURES[key] = str(exc)
        return None
    finally:
        with _SERVERS_LOCK:
            _STARTING[key] = max(0, _STARTING.get(key, 0) - 1)
    server.lock.acquire()
    with _SERVERS_LOCK:
        if _SERVERS.get(key) is pool:
            pool.append(server)
            return server
    server.close()                            # the pools were shut down while it started
    server.lock.release()
    return None


def idle_fork_servers(module: str, env: dict[str, str] | None = None) -> int:
    """How many live servers for *module* (and *env*) are waiting for a job now."""
    with _SERVERS_LOCK:
        return sum(1 for s in _SERVERS.get(_pool_key(module, env), []) if not s.lock.locked() and s.alive())


def prestart_fork_servers(module: str, env: dict[str, str] | None = None, count: int = 1) -> None:
    """Start servers for *module* in the background until its pool has *count*, started or starting, and
    return at once (a job that comes first starts its own, as before)."""
    key = _pool_key(module, env)
    with _SERVERS_LOCK:
        pool = _SERVERS.setdefault(key, [])
        live = sum(1 for s in pool if s.alive())
        missing = 0 if key in _SERVER_FAILURES else min(count - live, MAX_SERVERS_PER_MODULE - len(pool)) \
            - _STARTING.get(key, 0)
        missing = max(0, missing)
        _STARTING[key] = _STARTING.get(key, 0) + missing

    def start() -> None:
        server = _new_fork_server(key, pool, module, env)
        if server is not None:
            server.lock.release()
    for _ in range(missing):
        threading.Thread(target=start, name="kf-fork-server-prestart", daemon=True).start()


def _discard_fork_server(key: str, server: ForkServer) -> None:
    """Drop *server* (its lock held by the caller) from the pool under *key* and stop it."""
    with _SERVERS_LOCK:
        if server in _SERVERS.get(key, []):
            _SERVERS[key].remove(server)
    server.close()


def shutdown_fork_servers() -> None:
    """Stop every fork server this process started (also runs at exit)."""
    with _SERVERS_LOCK:
        for pool in _SERVERS.values():
            for server in pool:
                server.close()
        _SERVERS.clear()
        _SERVER_FAILURES.clear()


def fork_server_pids() -> list[int]:
    """Pids of the live fork servers of this process (for leak checks in tests)."""
    with _SERVERS_LOCK:
        return [s.proc.pid for pool in _SERVERS.values() for s in pool if s.alive()]


atexit.register(shutdown_fork_servers)


def default_mode() -> str:
    """``fork`` where the platform has fork, unless ``KF_SANDBOX_MODE=spawn``."""
    wanted = os.environ.get("KF_SANDBOX_MODE", "auto")
    if wanted in ("fork", "spawn"):
        return wanted
    return "fork" if hasattr(os, "fork") and sys.platform.startswith("linux") else "spawn"


# ---------------------------------------------------------------- child control
class _Child:
    """A started child: its pid and a way to learn that it ended (with wait status)."""

    def __init__(self, pid: int, waiter):
        self.pid = pid
        self._waiter = waiter
        self.status: int | None = None
        self.maxrss = 0
        self.lost = False

    def wait(self, timeout_s: float) -> bool:
        """True once the child has ended; waits at most *timeout_s*."""
        if self.status is None:
            try:
                got = self._waiter(timeout_s)
            except ForkServerError:                    # the server died: so did its child
                kill_all(self.pid, None)
                self.lost = True
                got = (signal.SIGKILL, 0)
            if got is not None:
                self.status, self.maxrss = got
        return self.status is not None


def _spawn(spec_path: str, output_fd: int, env: dict[str, str]) -> _Child:
    proc = subprocess.Popen([sys.executable, "-m", "kernelfoundry.sandbox.boot", spec_path],
                            stdin=subprocess.DEVNULL, stdout=output_fd, stderr=output_fd, env=env,
                            cwd=os.path.dirname(spec_path), start_new_session=True, close_fds=True)
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None

    def waiter(timeout_s: float):
        if pidfd is not None:
            select.select([pidfd], [], [], timeout_s)
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == 0:
            if pidfd is None:
                time.sleep(timeout_s)
            return None
        proc.returncode = os.waitstatus_to_exitcode(status)   # keep Popen from reaping again
        if pidfd is not None:
            os.close(pidfd)
        return status, usage.ru_maxrss * 1024

    return _Child(proc.pid, waiter)


def _fork(server: ForkServer, spec: dict, output_path: str) -> _Child:
    pid = server.start_job(spec, output_path)

    def waiter(timeout_s: float):
        msg = server.read_message(timeout_s)
        if msg is None:
            return None
        return int(msg["status"]), int(msg.get("maxrss_kb", 0)) * 1024

    return _Child(pid, waiter)


# ---------------------------------------------------------------- reading results
def _tail(fd: int, n: int) -> tuple[str, int]:
    size = os.fstat(fd).st_size
    os.lseek(fd, max(0, size - n), os.SEEK_SET)
    data = os.read(fd, n)
    return data.decode("utf-8", errors="replace"), size


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _fmt_bytes(n: float) -> str:
    return f"{n / GiB:g} GB" if n >= GiB else f"{n / MiB:g} MB"


def _exit_reason(status: int, limits: SandboxLimits, has_result: bool) -> tuple[str, int | None, int | None]:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            cpu = limits.cpu_s if limits.cpu_s is not None else limits.wall_s
            return f"used more than {cpu:g} s of CPU time (CPU limit)", None, sig
        if sig == signal.SIGXFSZ:
            return f"wrote a file over {_fmt_bytes(limits.file_bytes)} (file size limit)", None, sig
        if sig == signal.SIGKILL:
            return "was killed by SIGKILL from outside the sandbox (e.g. the out-of-memory killer)", None, sig
        return f"crashed with signal {sig} ({_signal_name(sig)})", None, sig
    code = os.WEXITSTATUS(status)
    if code != 0:
        when = "after writing its result" if has_result else "before writing a result"
        return f"exited with code {code} {when}", code, None
    return ("" if has_result else "exited with code 0 without writing a result"), 0, None


# ---------------------------------------------------------------- the entry point
def run_sandboxed(module: str, payload: dict[str, Any], limits: SandboxLimits | None = None, *,
                  mode: str | None = None, extra_files: tuple[str, ...] = (),
                  env: dict[str, str] | None = None, cancel: threading.Event | None = None,
                  gpu: bool = False, broker: str | None = None) -> SandboxOutcome:
    """Run ``python -m module IN.json OUT.json`` confined; never raises for child misbehaviour.

    *payload* is written to IN.json; OUT.json, if the child wrote valid JSON
    there, becomes ``outcome.result``; each of *extra_files* (names in the child's
    working directory) it wrote comes back in ``outcome.files``.  *mode*: "fork",
    "spawn" or None (default from :func:`default_mode`); "fork" falls back to
    "spawn" if no server starts.  *env* overrides entries of :func:`sandbox_env`
    (fork servers are pooled per module and env).  Setting *cancel* (from another thread)
    kills the child at the next poll (``killed_by="cancelled"``).  *gpu*, *broker*: see the module docstring.  Raises
    :class:`SandboxIsolationError` when the child could not be confined (no job ran).
    """
    limits = limits or SandboxLimits()
    mode = mode or default_mode()
    server = _acquire_fork_server(module, env) if mode == "fork" else None
    try:
        outcome = _run(module, payload, limits, server, mode, extra_files, env, cancel, gpu, broker)
    except BaseException:
        if server is not None:            # interrupted mid-job: its protocol state is unknown, drop it
            _discard_fork_server(_pool_key(module, env), server)
        raise
    else:
        if server is not None and not server.alive():     # it died during the job: drop it while we hold it
            _discard_fork_server(_pool_key(module, env), server)
        return outcome
    finally:
        if server is not None:
            server.lock.release()


def _run(module: str, payload: dict[str, Any], limits: SandboxLimits, server: ForkServer | None,
         mode: str, extra_files: tuple[str, ...] = (), env: dict[str, str] | None = None,
         cancel: threading.Event | None = None, gpu: bool = False,
         broker: str | None = None) -> SandboxOutcome:
    isolation = []
    if server is None and mode == "fork":
        why = _SERVER_FAILURES.get(_pool_key(module, env), f"all {MAX_SERVERS_PER_MODULE} servers busy")
        isolation.append(f"fork server unavailable ({why}); spawned")
    _sweep_once()
    base = tempfile.mkdtemp(prefix=f"kf-sandbox-{os.getpid()}-")
    uid = random.randrange(1 << 20, 1 << 30) if os.geteuid() == 0 else None
    try:
        os.chmod(base, 0o711)
        workdir = os.path.join(base, "job")
        os.mkdir(workdir, 0o700)
        in_path, out_path = os.path.join(workdir, "IN.json"), os.path.join(workdir, "OUT.json")
        with open(in_path, "w") as f:
            json.dump(payload, f)
        os.chmod(in_path, 0o644)
        if uid is not None:
            os.chown(workdir, uid, uid)
            os.mkdir(os.path.join(base, "root"), 0o755)      # the child's minimal root (fs.py)
        canary = os.path.join(base, "canary")                 # world-readable, yet must stay invisible
        with open(canary, "w") as f:
            f.write("the sandboxed child must not see this file\n")
        os.chmod(canary, 0o644)
        nproc = limits.max_threads if uid is not None else count_user_tasks(os.getuid()) + limits.max_threads
        progress_path = os.path.join(workdir, "progress")
        spec = {"module": module, "argv": [in_path, out_path], "workdir": workdir, "uid": uid,
                "new_root": os.path.join(base, "root") if uid is not None else None,
                "canary": canary, "strict": uid is not None,
                "rlimits": limits.rlimits(nproc=nproc),
                "env": {"HOME": workdir, "TMPDIR": workdir, "TRITON_CACHE_DIR": os.path.join(workdir, ".triton"),
                        "KF_SANDBOX_PROGRESS": progress_path}}
        if gpu:
            from .devices import gpu_spec
            spec["gpu"] = gpu_spec()
            spec["env"].update(spec["gpu"].pop("env"))
        if broker:
            from .broker import load_broker
            load_broker(broker)                   # a bad name fails here, in the driver, not in the child
            spec["broker"] = broker
        output_path = os.path.join(base, "output.log")
        output_fd = os.open(output_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            start = time.monotonic()
            child = None
            if server is not None:
                try:
                    spec["parent_pid"] = server.proc.pid
                    child = _fork(server, spec, output_path)
                except ForkServerError as exc:
                    isolation.append(f"fork server failed ({exc}); spawned instead")
            if child is None:
                mode = "spawn"
                spec["parent_pid"] = os.getpid()
                spec_path = os.path.join(workdir, "spec.json")
                with open(spec_path, "w") as f:
                    json.dump(spec, f)
                child = _spawn(spec_path, output_fd, {**sandbox_env(), **(env or {})})
            else:
                mode = "fork"
            try:
                killed_by, reason, peak = _watch(child, limits, output_fd, uid, start, cancel)
            finally:                                   # also on KeyboardInterrupt: nothing may outlive the job
                wall = time.monotonic() - start
                kill_all(child.pid, uid)
            tail, out_bytes = _tail(output_fd, limits.tail_bytes)
            if killed_by is None and out_bytes > limits.output_bytes:
                # It printed past the limit and ended (e.g. EFBIG at RLIMIT_FSIZE) between two polls.
                killed_by = "output"
                reason = f"killed: printed more than {_fmt_bytes(limits.output_bytes)} of output"
        finally:
            os.close(output_fd)
        raw = read_regular(out_path, limits.file_bytes)
        result, bad = None, ""
        if raw is not None:
            try:
                result = json.loads(raw)
                if not isinstance(result, dict):
                    result, bad = None, "wrote a result that is not a JSON object"
            except (ValueError, RecursionError) as exc:
                bad = f"wrote an unreadable result ({str(exc)[:200]})"
        status = child.status if child.status is not None else (signal.SIGKILL & 0x7F)
        exit_reason, exit_code, sig = _exit_reason(status, limits, result is not None)
        if child.lost and not reason:
            reason = "the fork server died while the job ran"
        if not reason:
            reason = bad or exit_reason
        progress_raw = read_regular(progress_path, 4096)
        progress = progress_raw.decode("utf-8", "replace").strip().splitlines()[-1:] if progress_raw else []
        notes_raw = read_regular(os.path.join(workdir, "isolation.json"), 4096)
        try:
            isolation += [str(n) for n in json.loads(notes_raw)] if notes_raw else ["child never confined itself"]
        except ValueError:
            isolation.append("isolation notes unreadable")
        failed = [n for n in isolation if n.startswith("ISOLATION FAILED")]
        if failed:
            raise SandboxIsolationError(
                "the sandbox could not confine the candidate's process on this machine ("
                + "; ".join(n.split(": ", 1)[1] for n in failed) + "); refusing to run untrusted code. "
                "See docs/verifier.md, 'The sandbox'.")
        ok = not reason and result is not None and exit_code == 0
        files = {}
        for name in extra_files:
            data = read_regular(os.path.join(workdir, os.path.basename(name)), limits.file_bytes)
            if data is not None:
                files[name] = data
        return SandboxOutcome(ok=ok, result=result, reason=reason, files=files,
                              exit_code=exit_code, signal=sig, killed_by=killed_by, output_tail=tail,
                              output_bytes=out_bytes, wall_s=round(wall, 3),
                              peak_rss_bytes=max(peak, child.maxrss),
                              progress=progress[0] if progress else None, mode=mode, isolation=isolation,
                              pid=child.pid, uid=uid)
    finally:
        if uid is not None and not os.path.isdir(os.path.join(base, "root")):
            _remove_files_of(uid)          # inside a minimal root the uid could write nothing of the host's
        shutil.rmtree(base, ignore_errors=True)


def _watch(child: _Child, limits: SandboxLimits, output_fd: int, uid: int | None,
           start: float, cancel: threading.Event | None = None) -> tuple[str | None, str, int]:
    """Poll until the child ends; SIGKILL its session on the first limit it breaks."""
    killed_by, reason, peak = None, "", 0
    next_scan = start
    session_pids = [child.pid]
    while not child.wait(limits.poll_s):
        now = time.monotonic()
        rss, threads, _ = status_numbers(child.pid)
        if now >= next_scan:                           # other processes of the session, if any
            next_scan = now + 0.25
            session_pids = [child.pid] + [pid for pid in sandbox_pids(child.pid, uid) if pid != child.pid]
            for pid in session_pids[1:]:
                extra_rss, extra_threads, _ = status_numbers(pid)
                rss, threads = rss + extra_rss, threads + extra_threads
        if rss > limits.rss_bytes:                     # RSS over-counts pages mapped many times: PSS decides
            rss = sum(physical_bytes(pid) for pid in session_pids)
        peak = max(peak, rss)
        if killed_by:
            kill_all(child.pid, uid)
            continue
        out_size = os.fstat(output_fd).st_size
        if cancel is not None and cancel.is_set():
            killed_by, reason = "cancelled", "cancelled by the verifier (an earlier gate failed)"
        elif now - start > limits.wall_s:
            killed_by, reason = "wall", f"timed out after {limits.wall_s:g} s"
        elif rss > limits.rss_bytes:
            killed_by, reason = "memory", f"killed: memory over {_fmt_bytes(limits.rss_bytes)}"
        elif out_size > limits.output_bytes:
            killed_by, reason = "output", f"killed: printed more than {_fmt_bytes(limits.output_bytes)} of output"
        elif threads > limits.max_threads:
            killed_by, reason = "threads", f"killed: more than {limits.max_threads} threads/processes"
        if killed_by:
            kill_all(child.pid, uid)
    return killed_by, reason, peak


_SWEPT = False


def _sweep_once() -> None:
    global _SWEPT
    if not _SWEPT:
        _SWEPT = True
        sweep_stale_dirs()


def sweep_stale_dirs() -> list[str]:
    """Remove sandbox temp dirs left by drivers that died (e.g. a killed worker); return them.

    A dir is ``kf-sandbox-<driver pid>-*``; it is stale when that pid is gone.
    Files its throwaway uid left in world-writable directories go too.
    """
    removed = []
    top = tempfile.gettempdir()
    for entry in os.scandir(top):
        parts = entry.name.split("-")
        if not entry.name.startswith("kf-sandbox-") or len(parts) < 4 or not parts[2].isdigit():
            continue
        try:
            os.kill(int(parts[2]), 0)
            continue                                   # its driver is alive
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            uid = os.stat(os.path.join(entry.path, "job"), follow_symlinks=False).st_uid
        except OSError:
            uid = 0
        if uid and os.geteuid() == 0:
            kill_all(-1, uid)
            _remove_files_of(uid)
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed


def _remove_files_of(uid: int, *, max_depth: int = 8) -> None:
    """Delete what the sandbox uid left in world-writable directories, nested ones included.

    The uid can only create entries in directories others may write to (or in the ones it
    made, which go whole), so the walk descends only into world-writable directories:
    it never lists the rest of /tmp.
    """
    pending = [(top, 0) for top in _WORLD_WRITABLE_DIRS]
    while pending:
        path, depth = pending.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
                if st.st_uid == uid:
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)
                elif stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH and depth < max_depth:
                    pending.append((entry.path, depth + 1))
            except OSError:
                pass


def with_limits(limits: SandboxLimits | None, **changes: Any) -> SandboxLimits:
    """*limits* (or the defaults) with some fields replaced."""
    return replace(limits or SandboxLimits(), **changes)
