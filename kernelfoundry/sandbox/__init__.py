"""The sandbox that runs untrusted code: candidate kernels, problem files, compile and measure jobs.

A job is a module run in a child process with wall-clock, memory and address-space limits,
its own session, network and mount namespaces, a minimal read-only root, a throwaway uid and
a seccomp filter (:mod:`.process` starts and watches it, :mod:`.boot` confines it, :mod:`.fs`
and :mod:`.seccomp` are the confinement, :mod:`.forkserver` keeps warm interpreters to fork
from, :mod:`.devices` and :mod:`.ptxas` open the GPU to measure jobs, :mod:`.channel` carries
bulk arrays back). Users of the sandbox (``evaluate``, ``compiler``, ``measure``,
``kernelbench``) import these names, not the modules.
"""

from .process import (GiB, MiB, SandboxIsolationError, SandboxLimits, SandboxOutcome, fork_server_pids,
                      run_sandboxed, shutdown_fork_servers, with_limits)

__all__ = ["GiB", "MiB", "SandboxIsolationError", "SandboxLimits", "SandboxOutcome", "fork_server_pids",
           "run_sandboxed", "shutdown_fork_servers", "with_limits"]
