"""Pre-seccomp brokers: a helper process a sandboxed job forks before its seccomp filter goes on.

A job whose filter forbids something it needs (``execve``: Triton's NVIDIA backend runs ``ptxas``) can be
given a *broker*: a module, named by the trusted driver in the job's spec (``run_sandboxed(broker=...)``,
so the sandbox depends on no layer above it), with two functions that :mod:`.boot` calls:

* ``start_broker(notes) -> socket | None``: after the rlimits and the uid drop, before the filter; forks
  the broker (usually through :func:`fork_broker`) and returns the child's end of a socket pair, or None
  (the job then runs without it, with a note);
* ``install_client(sock) -> str``: after the filter; routes the job's calls to the broker; returns a note.

The broker answers only the requests it parses itself, builds every command itself, and runs in the
sandbox's session (the watchdog counts and kills it).  Frames, both ways: 8 bytes (header length, body
length; big-endian u32), a JSON header, then the body.  The one broker today is
:mod:`kernelfoundry.compiler.ptxas_broker` (the device job's cubin step).
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import re
import signal
import socket
import struct
from types import ModuleType
from typing import Any, Callable

_FRAME = struct.Struct("!II")
#: A broker is a module of this package, named in full.
_NAME = re.compile(r"kernelfoundry(\.[A-Za-z_][A-Za-z0-9_]*)+")


class BrokerGone(ConnectionError):
    """The broker's end is closed (it died or was never started)."""


def load_broker(name: str) -> ModuleType:
    """The broker module *name* (a module of this package with ``start_broker`` and ``install_client``)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"broker {name!r} is not a kernelfoundry module name")
    module = importlib.import_module(name)
    missing = [f for f in ("start_broker", "install_client") if not callable(getattr(module, f, None))]
    if missing:
        raise ValueError(f"broker {name} has no {', '.join(missing)}")
    return module


def fork_broker(serve: Callable[[socket.socket], None]) -> tuple[socket.socket, int]:
    """Fork a broker process that runs ``serve(sock)`` until the job closes its end and dies with the job
    (``PR_SET_PDEATHSIG``); returns (the job's end, the broker's pid)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:                                         # the broker: never returns
        code = 0
        try:
            ours.close()
            ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)      # PR_SET_PDEATHSIG
            if os.getppid() == parent:
                serve(theirs)
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    theirs.close()
    return ours, pid


# ---------------------------------------------------------------- frames
def send_frame(sock: socket.socket, header: dict[str, Any], body: bytes = b"") -> None:
    raw = json.dumps(header).encode()
    sock.sendall(_FRAME.pack(len(raw), len(body)) + raw)
    if body:
        sock.sendall(body)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _drain(sock: socket.socket, n: int) -> bool:
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return False
        n -= len(chunk)
    return True


def recv_frame(sock: socket.socket, max_header: int, max_body: int) -> tuple[bytes | None, bytes | None] | None:
    """``(header, body)``; a part over its limit is read and dropped (None); None at end of stream."""
    sizes = _recv_exact(sock, _FRAME.size)
    if sizes is None:
        return None
    header_len, body_len = _FRAME.unpack(sizes)
    parts = []
    for n, limit in ((header_len, max_header), (body_len, max_body)):
        if n > limit:
            if not _drain(sock, n):
                return None
            parts.append(None)
        else:
            data = _recv_exact(sock, n)
            if data is None:
                return None
            parts.append(data)
    return parts[0], parts[1]
