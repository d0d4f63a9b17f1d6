"""A pre-warmed fork server: import torch + triton once, fork one child per job.

Starting a fresh interpreter and importing torch + triton costs ~1.6 s here,
a third of the verifier's per-candidate budget; ``fork`` costs ~15 ms.  The
server (``python -m kernelfoundry.sandbox.forkserver [PRELOAD ...]``)
is trusted code: it never runs a job itself.  Each forked child enters the
sandbox exactly as a spawned one does (:mod:`.boot`): new session, its
own stdio, limits, uid drop, seccomp.  The driver watches the child by pid and
kills it; the server reaps it and reports the wait status.

Protocol (JSON lines): the server writes ``{"ready": true}`` once, then per job
reads ``{"spec": ..., "output": path}`` and writes ``{"pid": N}`` after the
fork and ``{"pid": N, "status": S, "maxrss_kb": K}`` after reaping.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback

from .boot import enter_sandbox, run_job


def _child(job: dict) -> None:
    """In the forked child: detach, redirect stdio, confine, run; never returns.

    Every inherited descriptor above 2 (the protocol pipes included) is closed.
    """
    code = 1
    try:
        os.setsid()
        out = os.open(job["output"], os.O_WRONLY | os.O_APPEND)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.closerange(3, 1 << 16)
        enter_sandbox(job["spec"])
        try:
            run_job(job["spec"])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, (int, type(None))):
                print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - report anything, then exit
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF)


def _die_with_driver() -> None:
    """SIGKILL the server (and so, by their own death signal, its children) if the driver dies."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)     # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != int(os.environ.get("KF_DRIVER_PID", os.getppid())):
        os._exit(1)                                             # the driver died before prctl


def serve(preload: list[str]) -> None:
    """Server main loop: requests on stdin, responses on the original stdout."""
    _die_with_driver()
    responses = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)                     # stray prints from imports must not corrupt the protocol
    import torch  # noqa: F401  - the point of the server: import once
    import triton  # noqa: F401
    import triton.language  # noqa: F401
    preloaded = []
    for name in preload:             # best effort: a job module that fails to import is run anyway
        try:
            module = importlib.import_module(name)
            preloaded.append(name)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            continue
        warm_up = getattr(module, "warm_up", None)   # trusted work that leaves lazy imports and caches done
        if callable(warm_up):
            problem = warm_up()
            if problem:
                print(f"fork server: {name}.warm_up: {problem}", file=sys.stderr)
    requests = sys.stdin.buffer

    def send(obj):
        responses.write(json.dumps(obj) + "\n")
        responses.flush()

    send({"ready": True, "pid": os.getpid(), "preloaded": preloaded})
    for line in requests:
        job = json.loads(line)
        try:
            pid = os.fork()
        except OSError as exc:        # e.g. the user's process limit, reached by a job's leftovers
            send({"error": f"fork failed: {exc}"})
            continue
        if pid == 0:
            _child(job)
        send({"pid": pid})
        _, status, usage = os.wait4(pid, 0)
        send({"pid": pid, "status": status, "maxrss_kb": usage.ru_maxrss})


class ForkServerError(RuntimeError):
    """The fork server could not start or stopped answering."""


class ForkServer:
    """Driver-side handle on one fork server process (one job at a time)."""

    def __init__(self, preload: tuple[str, ...], env: dict[str, str], *, start_timeout_s: float = 120.0):
        self.preload = preload
        self.lock = threading.Lock()
        self._buf = b""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelfoundry.sandbox.forkserver", *preload],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**env, "KF_DRIVER_PID": str(os.getpid())}, start_new_session=True, close_fds=True)
        hello = self.read_message(start_timeout_s)
        if not hello or not hello.get("ready"):
            self.close()
            raise ForkServerError(f"fork server did not start (exit code {self.proc.poll()})")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def read_message(self, timeout_s: float) -> dict | None:
        """Next JSON line from the server, or None after *timeout_s* (never blocks longer)."""
        deadline = time.monotonic() + timeout_s
        try:
            fd = self.proc.stdout.fileno()
        except ValueError:                      # closed by close(): the server is gone for us
            raise ForkServerError("fork server was closed") from None
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise ForkServerError(f"fork server exited (code {self.proc.wait()})")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def start_job(self, spec: dict, output_path: str) -> int:
        """Fork a child for *spec* (stdout/stderr appended to *output_path*); return its pid."""
        try:
            self.proc.stdin.write((json.dumps({"spec": spec, "output": output_path}) + "\n").encode())
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:   # ValueError: the stream was closed
            raise ForkServerError(f"fork server is gone: {exc}") from None
        msg = self.read_message(30.0)
        if msg and "error" in msg:
            raise ForkServerError(str(msg["error"]))
        if not msg or "pid" not in msg or "status" in msg:
            raise ForkServerError("fork server did not report the child's pid")
        return int(msg["pid"])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass


if __name__ == "__main__":
    serve(sys.argv[1:])
