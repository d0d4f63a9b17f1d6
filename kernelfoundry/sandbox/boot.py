"""Inside the sandboxed child: confine this process, then run the job module.

Runs before any candidate code, in the child process only (spawned as
``python -m kernelfoundry.sandbox.boot SPEC.json`` or forked by the
fork server).  In order: working directory and environment, resource limits,
(as root) private network, IPC and mount namespaces with a minimal read-only
root (:mod:`.fs`) and a drop to a throwaway uid with no capabilities,
then the seccomp filter, then ``runpy`` of the job module with
``sys.argv = [module, *argv]``.  A spec with ``gpu`` (the device job only) also gets
the host's GPU pieces in its root and Triton's driver built before the filter (:mod:`.devices`);
one with ``broker`` gets that broker started before the filter and its client installed after
(:mod:`.broker`: the device job's ptxas broker).
What was applied is written to ``isolation.json`` in the working directory.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import runpy
import sys

from .. import PACKAGE_DIR
from .fs import enter_minimal_root, unshare_namespaces
from .seccomp import install_filter

_PR_SET_PDEATHSIG = 1


def apply_limits(limits: dict) -> None:
    """Set the hard resource limits described by ``SandboxLimits.rlimits()``."""
    for name, value in limits.items():
        res = getattr(resource, name)
        soft, hard = (value, value) if isinstance(value, int) else value
        resource.setrlimit(res, (soft, hard))


def drop_privileges(uid: int) -> list[str]:
    """As root: become *uid* with no groups and no capabilities left."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    return [f"uid {uid}"]


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


#: Exit status of a child whose confinement check failed (the driver raises, no job runs).
ISOLATION_EXIT = 71
#: Host directories a job could use to leave state for a later job if it could write them.
SHARED_WRITABLE = ("/run/lock", "/var/lock", "/dev/shm", "/run/shm", "/var/tmp", "/dev/mqueue")


def isolation_problems(spec: dict) -> list[str]:
    """What does not hold of the confinement promised to a root driver (checked in the child,
    after confinement and before any job code): no capabilities, not root, no writable shared
    directory, the driver's canary file invisible, no SysV shared memory, no sockets."""
    problems = []
    try:
        with open("/proc/self/status") as f:
            caps = {line.split(":")[0]: int(line.split()[1], 16) for line in f if line.startswith("Cap")}
        if caps.get("CapEff") or caps.get("CapPrm"):
            problems.append(f"capabilities left: CapEff {caps.get('CapEff', 0):#x}")
    except OSError as exc:
        problems.append(f"/proc/self/status unreadable ({exc})")
    if os.getuid() == 0 or os.geteuid() == 0:
        problems.append("still root")
    for path in SHARED_WRITABLE:
        if os.path.isdir(path) and os.access(path, os.W_OK):
            problems.append(f"{path} is writable")
    canary = spec.get("canary")
    if canary and os.path.exists(canary):
        problems.append(f"the driver's file {canary} is visible")
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(0, 4096, 0o1600)                       # IPC_PRIVATE | IPC_CREAT
    if segment >= 0:
        libc.shmctl(segment, 0, None)                           # IPC_RMID
        problems.append("SysV shared memory can be created")
    import socket
    try:
        socket.socket(socket.AF_UNIX).close()
        problems.append("sockets can be opened")
    except OSError:
        pass
    return problems


def enter_sandbox(spec: dict) -> list[str]:
    """Confine the calling process as *spec* says; return notes on what was applied."""
    os.chdir(spec["workdir"])
    os.environ.update(spec.get("env", {}))
    apply_limits({k: tuple(v) if isinstance(v, list) else v for k, v in spec["rlimits"].items()})
    notes = ["rlimits"]
    gpu = spec.get("gpu") or {}
    if spec.get("uid") is not None and os.geteuid() == 0:
        notes += unshare_namespaces()
        if spec.get("new_root"):
            notes += enter_minimal_root(spec["new_root"], spec["workdir"], str(PACKAGE_DIR),
                                        extra=gpu.get("device_paths", ()))
        notes += drop_privileges(int(spec["uid"]))
    _die_with_parent(spec.get("parent_pid"), notes)
    if gpu.get("prepare_driver"):
        from .devices import prepare_triton_driver
        notes.append(prepare_triton_driver())
    plugin = broker = None
    if spec.get("broker"):                       # a pre-seccomp broker the driver named (.broker)
        from .broker import load_broker
        plugin = load_broker(spec["broker"])
        broker = plugin.start_broker(notes)
    notes.append(install_filter())
    if broker is not None:
        notes.append(plugin.install_client(broker))
    problems = isolation_problems(spec) if spec.get("strict") else []
    with open("isolation.json", "w") as f:
        json.dump(notes + [f"ISOLATION FAILED: {p}" for p in problems], f)
    if problems:
        os._exit(ISOLATION_EXIT)
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
