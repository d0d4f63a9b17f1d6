"""Run a compiler tool (ptxas, cuobjdump, nvdisasm) on untrusted input, confined.

The tools read assembly that a sandboxed candidate process produced, so their
input is attacker-controlled data.  :func:`run_tool` runs one in a private
temporary directory with a minimal environment, its own session, hard rlimits
(address space, CPU seconds, file size, no core dumps) and a wall-clock
timeout; a root driver also runs it as a throwaway uid with no groups (the
directory is handed to that uid; only when other users can reach the tool's
binary), so a tool exploited by its input can neither write the driver's files
nor signal its processes.  No candidate Python runs here.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..safe_io import read_regular

GiB = 1 << 30


@dataclass
class ToolResult:
    """What one tool run did: exit code (None when killed), its output files' text, seconds."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    reason: str = ""                 # "" or why it was stopped ("timed out after 60 s")
    outputs: dict[str, bytes] | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.reason


@dataclass(frozen=True)
class ToolLimits:
    timeout_s: float = 120.0
    address_space_bytes: int = 8 * GiB
    cpu_s: int = 120
    file_bytes: int = 512 << 20
    max_output_bytes: int = 256 << 20


def _limit(limits: ToolLimits, uid: int | None, die_with_parent: bool = False):
    def apply() -> None:
        if die_with_parent:                       # PR_SET_PDEATHSIG: SIGKILL when the caller dies
            import ctypes
            ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)
        resource.setrlimit(resource.RLIMIT_AS, (limits.address_space_bytes, limits.address_space_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 2))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if uid is not None:                       # counts this throwaway uid only
            resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
    return apply





def _others_can_execute(path: str) -> bool:
    """Whether a throwaway uid can reach and run *path* (every directory searchable, file executable)."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        try:
            mode = os.stat(os.sep.join(parts[:i])).st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
    return True


def run_tool(argv: list[str], inputs: dict[str, bytes], outputs: tuple[str, ...] = (), *,
             limits: ToolLimits | None = None, new_session: bool = True) -> ToolResult:
    """Run ``argv`` (``{dir}`` in an argument becomes the private directory) on *inputs*.

    *inputs* (file name -> bytes) are written to the directory first; the files
    named in *outputs* are read back (regular files only) into ``result.outputs``.
    stdout and stderr go to files there too, so a flood of output hits the file
    size limit instead of the driver's memory.  ``new_session=False`` (the sandbox's
    ptxas broker) keeps the tool in the caller's session, where the sandbox's
    watchdog counts and kills it, and kills it if the caller dies.
    """
    limits = limits or ToolLimits()
    drop = os.geteuid() == 0 and _others_can_execute(argv[0])
    uid = random.randrange(1 << 20, 1 << 30) if drop else None
    workdir = Path(tempfile.mkdtemp(prefix="kf-compile-tool-"))
    start = time.monotonic()
    try:
        for name, data in inputs.items():
            (workdir / name).write_bytes(data)
        if uid is not None:
            for entry in [workdir, *workdir.iterdir()]:
                os.chown(entry, uid, uid)
        argv = [a.replace("{dir}", str(workdir)) for a in argv]
        env = {"PATH": "/usr/bin:/bin", "LANG": "C", "HOME": str(workdir), "TMPDIR": str(workdir)}
        with open(workdir / ".stdout", "wb") as out, open(workdir / ".stderr", "wb") as err:
            if uid is not None:
                os.fchown(out.fileno(), uid, uid)
                os.fchown(err.fileno(), uid, uid)
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=workdir, env=env,
                                    start_new_session=new_session, close_fds=True,
                                    preexec_fn=_limit(limits, uid, die_with_parent=not new_session),
                                    user=uid, group=uid, extra_groups=[] if uid is not None else None)
            reason = ""
            try:
                proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                reason = f"timed out after {limits.timeout_s:g} s"
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL) if new_session else proc.kill()
                except OSError:
                    pass
                proc.wait()
        seconds = time.monotonic() - start
        stdout = (read_regular(workdir / ".stdout", limits.max_output_bytes) or b"").decode("utf-8", "replace")
        stderr = (read_regular(workdir / ".stderr", 1 << 20) or b"").decode("utf-8", "replace")
        code = proc.returncode
        if code is not None and code < 0 and not reason:
            sig = -code
            reason = ("used more than its CPU time limit" if sig == signal.SIGXCPU
                      else f"was killed by signal {sig}")
            code = None
        got = {}
        for name in outputs:
            data = read_regular(workdir / name, limits.file_bytes)
            if data is not None:
                got[name] = data
        return ToolResult(returncode=code, stdout=stdout, stderr=stderr, seconds=round(seconds, 4),
                          reason=reason, outputs=got)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
