"""The sandbox that runs untrusted code: candidate kernels, problem files, compile and measure jobs.

A job is a module run in a child process with wall-clock, memory and address-space limits,
its own session, network and mount namespaces, a minimal read-only root, a throwaway uid and
a seccomp filter (:mod:`.process` starts and watches it, :mod:`.procfs` reads what /proc says of its
processes, :mod:`.boot` confines it, :mod:`.fs` and :mod:`.seccomp` are the confinement, :mod:`.forkserver`
keeps warm interpreters to fork from, :mod:`.devices` opens the GPU to measure jobs, :mod:`.broker` runs a
pre-seccomp broker its caller names (the compiler's ptxas one), :mod:`.channel` carries bulk arrays back).
A broker's module uses :func:`fork_broker`, :func:`send_frame`, :func:`recv_frame` and :class:`BrokerGone`.
Users of the sandbox (``evaluate``, ``compiler``, ``measure``,
``kernelbench``) import these names, not the modules.  The channel's names (``DATA_FILE``, :class:`BlobReader`,
:class:`BlobWriter`, :class:`ChannelError`) are imported on first use (numpy), not with the package.
"""

from typing import TYPE_CHECKING

from .. import public_names
from .broker import BrokerGone, fork_broker, recv_frame, send_frame
from .process import (GiB, MiB, SandboxIsolationError, SandboxLimits, SandboxOutcome, default_mode,
                      fork_server_pids, idle_fork_servers, prestart_fork_servers, run_sandboxed,
                      shutdown_fork_servers, with_limits)

if TYPE_CHECKING:       # for type checkers, and for grimp's graph: the package depends on this module
    from .channel import DATA_FILE, BlobReader, BlobWriter, ChannelError

_EXPORTS = dict.fromkeys(("DATA_FILE", "BlobReader", "BlobWriter", "ChannelError"), "channel")

__all__ = ["BlobReader", "BlobWriter", "BrokerGone", "ChannelError", "DATA_FILE", "GiB", "MiB", "SandboxIsolationError",
           "SandboxLimits", "SandboxOutcome", "default_mode", "fork_server_pids", "idle_fork_servers",
           "prestart_fork_servers", "run_sandboxed", "shutdown_fork_servers",
           "with_limits", "fork_broker", "recv_frame", "send_frame"]

__getattr__, __dir__ = public_names(__name__, _EXPORTS, globals())
