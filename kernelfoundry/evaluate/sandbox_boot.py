"""Inside the sandboxed child: confine this process, then run the job module.

Runs before any candidate code, in the child process only (spawned as
``python -m kernelfoundry.evaluate.sandbox_boot SPEC.json`` or forked by the
fork server).  In order: working directory and environment, resource limits,
(as root) a private network namespace and a drop to a throwaway uid, then the
seccomp filter, then ``runpy`` of the job module with ``sys.argv = [module, *argv]``.
What was applied is written to ``isolation.json`` in the working directory.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import runpy
import stat
import sys

from .sandbox_seccomp import install_filter

_CLONE_NEWNET = 0x40000000
_PR_SET_KEEPCAPS = 8
_PR_SET_PDEATHSIG = 1
_CAP_DAC_READ_SEARCH = 2
_CAP_VERSION_3 = 0x20080522


def apply_limits(limits: dict) -> None:
    """Set the hard resource limits described by ``SandboxLimits.rlimits()``."""
    for name, value in limits.items():
        res = getattr(resource, name)
        soft, hard = (value, value) if isinstance(value, int) else value
        resource.setrlimit(res, (soft, hard))


def _others_can_read_interpreter() -> bool:
    """Whether an unprivileged uid can reach the interpreter's stdlib and this package."""
    paths = {os.path.dirname(os.__file__), os.path.dirname(os.path.abspath(__file__))}
    for path in paths:
        parts = os.path.abspath(path).split(os.sep)
        for i in range(2, len(parts) + 1):
            mode = os.stat(os.sep.join(parts[:i]) or os.sep).st_mode
            if not mode & stat.S_IXOTH or (i == len(parts) and not mode & stat.S_IROTH):
                return False
    return True


def _capset_read_search(libc) -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    bit = 1 << _CAP_DAC_READ_SEARCH
    data = (Data * 2)(Data(bit, bit, 0), Data(0, 0, 0))
    if libc.capset(ctypes.byref(Header(_CAP_VERSION_3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def drop_privileges(uid: int) -> list[str]:
    """As root: private network namespace, then become *uid* (no groups).

    When the interpreter lives where other users cannot read (e.g. under
    /root), keep only CAP_DAC_READ_SEARCH so lazy imports still work; the
    process can then read files but not write, signal or own anything of root's.
    """
    notes = []
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) == 0:
        notes.append("netns")
    keep_read = not _others_can_read_interpreter()
    if keep_read:
        libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if keep_read:
        _capset_read_search(libc)
        libc.prctl(_PR_SET_KEEPCAPS, 0, 0, 0, 0)
        notes.append(f"uid {uid} (+read-search)")
    else:
        notes.append(f"uid {uid}")
    return notes


def _die_with_parent(parent: int | None, notes: list[str]) -> None:
    """SIGKILL this process when its parent (driver or fork server) dies.

    Set after the uid change, which clears it; exit at once if the parent
    (pid *parent*) is already gone.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0) == 0:
        notes.append("pdeathsig")
    if parent is not None and os.getppid() != parent:
        os._exit(70)


def enter_sandbox(spec: dict) -> list[str]:
    """Confine the calling process as *spec* says; return notes on what was applied."""
    os.chdir(spec["workdir"])
    os.environ.update(spec.get("env", {}))
    apply_limits({k: tuple(v) if isinstance(v, list) else v for k, v in spec["rlimits"].items()})
    notes = ["rlimits"]
    if spec.get("uid") is not None and os.geteuid() == 0:
        notes += drop_privileges(int(spec["uid"]))
    _die_with_parent(spec.get("parent_pid"), notes)
    notes.append(install_filter())
    with open("isolation.json", "w") as f:
        json.dump(notes, f)
    return notes


def run_job(spec: dict) -> None:
    """Run the job module as ``__main__`` (exceptions and SystemExit propagate)."""
    sys.argv = [spec["module"], *spec["argv"]]
    sys.modules.pop(spec["module"], None)     # preloaded by the fork server: run it afresh as __main__
    runpy.run_module(spec["module"], run_name="__main__", alter_sys=True)


def main(argv: list[str]) -> None:
    with open(argv[0]) as f:
        spec = json.load(f)
    enter_sandbox(spec)
    run_job(spec)


if __name__ == "__main__":
    main(sys.argv[1:])
