"""The device job's ptxas broker: Triton's cubin step inside a sandbox whose seccomp filter forbids ``execve``.

Triton's NVIDIA backend turns PTX into a cubin by running ``ptxas`` (``make_cubin``) and asks
``ptxas --version`` for its cache key (``get_ptxas_version``).  A sandboxed child cannot exec, so when
its spec names this module as its broker (``run_sandboxed(broker=PTXAS_BROKER)``, the device job only),
the sandbox's boot (:mod:`kernelfoundry.sandbox.broker`) calls

* :func:`start_broker` after the rlimits and the uid drop, before the filter: it forks a broker that
  answers on a socket pair and warms Triton's tool look-ups (each runs ``--version`` once) so the
  child never needs them again;
* :func:`install_client` after the filter: Triton's ``CUDABackend.make_cubin`` and
  ``get_ptxas_version`` now ask the broker.

The broker accepts only ``{"op": "version" | "assemble", "capability": int, "fmad": bool, "debug":
"lineinfo" | "none" | "full", "opt_level": null | 0 | 1}`` (the choices Triton's own ``make_cubin`` makes
from its options and knobs) plus the PTX as UTF-8 text without NUL bytes, at most 32 MB.  It builds the
command itself (:func:`kernelfoundry.compiler.nvidia.ptxas_argv`) around the ptxas Triton picks for that
capability; no argument comes from the child.  ptxas runs through
:func:`kernelfoundry.compiler.tools.run_tool`: private temp dir, rlimits, a 60 s limit, in the sandbox's
session (the watchdog counts and kills it).  Anything else gets ``{"ok": false, "error": ...}`` and nothing
runs.  The broker exits when the child closes its end, and is SIGKILLed when the child dies.

Frames (:mod:`kernelfoundry.sandbox.broker`): the PTX in a request's body, the cubin in a reply's, whose
header is ``{"ok", "error", "log", "returncode"}``.
"""

from __future__ import annotations

import functools
import inspect
import json
import resource
import socket
import threading
from typing import Any, Callable

from ..sandbox import BrokerGone, fork_broker, recv_frame, send_frame

MAX_HEADER_BYTES = 4096
MAX_PTX_BYTES = 32 << 20
MAX_CUBIN_BYTES = 256 << 20
MAX_LOG_CHARS = 64 << 10
TIMEOUT_S = 60.0
_FIELDS = {"op", "capability", "fmad", "debug", "opt_level"}
_DEBUG = ("lineinfo", "none", "full")

#: The name a job's spec gives this broker by.
PTXAS_BROKER = __name__

Runner = Callable[[list[str], dict[str, bytes], tuple[str, ...]], Any]


# ---------------------------------------------------------------- the broker
def parse_request(header: bytes | None, body: bytes | None) -> tuple[dict[str, Any] | None, str]:
    """``(request, "")`` for a well-formed request, else ``(None, why)``; *body* is the PTX."""
    if header is None:
        return None, f"request header over {MAX_HEADER_BYTES} bytes"
    try:
        req = json.loads(header)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None, "request header is not JSON"
    if not isinstance(req, dict):
        return None, "request header is not a JSON object"
    if set(req) - _FIELDS:
        return None, f"unknown request fields {sorted(set(req) - _FIELDS)}"
    cap = req.get("capability")
    if req.get("op") not in ("version", "assemble"):
        return None, "op must be 'version' or 'assemble'"
    if type(cap) is not int or not 30 <= cap < 200:
        return None, "capability must be an integer compute capability such as 90"
    if req["op"] == "version":
        return req, ""
    level = req.get("opt_level")
    if type(req.get("fmad")) is not bool or req.get("debug") not in _DEBUG or not (
            level is None or (type(level) is int and level in (0, 1))):
        return None, f"assemble needs fmad (bool), debug {_DEBUG}, opt_level (null, 0 or 1)"
    if body is None:
        return None, f"PTX over {MAX_PTX_BYTES >> 20} MB"
    if not body or b"\0" in body:
        return None, "PTX is empty or holds NUL bytes"
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return None, "PTX is not UTF-8 text"
    return req, ""


def _tool_limits():
    """The broker's :class:`ToolLimits`, within the sandbox's hard limits (an unprivileged process
    cannot raise them)."""
    from .tools import ToolLimits

    def cap(value: int, which: int, slack: int = 0) -> int:
        hard = resource.getrlimit(which)[1]
        return value if hard == resource.RLIM_INFINITY else max(1, min(value, hard - slack))
    default = ToolLimits()
    return ToolLimits(timeout_s=TIMEOUT_S, address_space_bytes=cap(default.address_space_bytes, resource.RLIMIT_AS),
                      cpu_s=cap(int(TIMEOUT_S), resource.RLIMIT_CPU, 2),
                      file_bytes=cap(default.file_bytes, resource.RLIMIT_FSIZE),
                      max_output_bytes=MAX_LOG_CHARS)


def _run_confined(argv: list[str], inputs: dict[str, bytes], outputs: tuple[str, ...]):
    from .tools import run_tool
    return run_tool(argv, inputs, outputs, limits=_tool_limits(), new_session=False)


def _trim(text: str) -> str:
    return text if len(text) <= MAX_LOG_CHARS else text[:MAX_LOG_CHARS // 2] + "\n...\n" + text[-MAX_LOG_CHARS // 2:]


def handle(req: dict[str, Any], ptx: bytes | None, runner: Runner) -> tuple[dict[str, Any], bytes]:
    """Answer one parsed request by running Triton's ptxas through *runner*; returns (reply, cubin)."""
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability
    from .nvidia import ptxas_argv
    ptxas = get_ptxas(req["capability"]).path
    if req["op"] == "version":
        run = runner([ptxas, "--version"], {}, ())
        return {"ok": run.ok, "error": run.reason, "log": _trim(run.stdout), "returncode": run.returncode}, b""
    argv = ptxas_argv(ptxas, sm_arch_from_capability(req["capability"]), fmad=req["fmad"], debug=req["debug"],
                      opt_level=req.get("opt_level"))
    run = runner(argv, {"kernel.ptx": ptx or b""}, ("kernel.cubin",))
    cubin = (run.outputs or {}).get("kernel.cubin", b"") if run.ok else b""
    reply = {"ok": bool(cubin), "error": run.reason or ("" if cubin else "ptxas wrote no cubin"),
             "log": _trim(run.stderr + run.stdout), "returncode": run.returncode}
    if len(cubin) > MAX_CUBIN_BYTES:
        return {**reply, "ok": False, "error": f"cubin over {MAX_CUBIN_BYTES >> 20} MB"}, b""
    return reply, cubin


def serve(sock: socket.socket, runner: Runner = _run_confined) -> None:
    """Answer requests on *sock* until the other end closes it."""
    while True:
        frame = recv_frame(sock, MAX_HEADER_BYTES, MAX_PTX_BYTES)
        if frame is None:
            return
        req, why = parse_request(*frame)
        try:
            reply, cubin = handle(req, frame[1], runner) if req else ({"ok": False, "error": why}, b"")
        except Exception as exc:  # noqa: BLE001 - the broker answers; it does not die on a bad run
            reply, cubin = {"ok": False, "error": f"broker: {type(exc).__name__}: {exc}"[:2000]}, b""
        send_frame(sock, reply, cubin)


def start_broker(notes: list[str]) -> socket.socket | None:
    """Before the seccomp filter: warm Triton's ptxas look-ups, fork the broker; the child's end, or None."""
    try:
        from triton import knobs
        for tool in (knobs.nvidia.ptxas, knobs.nvidia.ptxas_blackwell):   # each runs `--version` once, cached
            if tool is None:
                raise FileNotFoundError("Triton finds no ptxas")
        import triton.backends.nvidia.compiler  # noqa: F401 - imported before the fork, used by both sides
        from . import nvidia  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - no NVIDIA backend: the job runs without a broker
        notes.append(f"no ptxas broker ({type(exc).__name__}: {exc})"[:300])
        return None
    ours, pid = fork_broker(serve)
    notes.append(f"ptxas broker (pid {pid})")
    return ours


# ---------------------------------------------------------------- the child's side
#: The child's client once :func:`install_client` ran (None elsewhere).
CLIENT: BrokerClient | None = None


class BrokerClient:
    """The sandboxed child's end: one request at a time."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.lock = threading.Lock()
        sock.settimeout(TIMEOUT_S + 30)

    def request(self, req: dict[str, Any], ptx: bytes = b"") -> tuple[dict[str, Any], bytes]:
        with self.lock:
            try:
                send_frame(self.sock, req, ptx)
                frame = recv_frame(self.sock, 1 << 20, MAX_CUBIN_BYTES)
            except OSError as exc:
                raise BrokerGone(f"the ptxas broker is gone ({exc})") from exc
        if frame is None or frame[0] is None:
            raise BrokerGone("the ptxas broker is gone")
        return json.loads(frame[0]), frame[1] or b""

    def version(self, capability: int) -> str:
        reply, _ = self.request({"op": "version", "capability": int(capability)})
        if not reply.get("ok"):
            raise RuntimeError(f"ptxas --version failed in the broker: {reply.get('error')} {reply.get('log', '')}")
        return reply["log"]


def _assemble(client: BrokerClient, src: str, opt: Any, capability: int) -> bytes:
    """Triton's ``make_cubin`` through the broker: the same choices from *opt* and the knobs, no exec."""
    from triton import knobs
    from triton.backends.nvidia import compiler as nv
    from triton.runtime.errors import PTXASError
    if getattr(opt, "ptx_options", None):
        raise PTXASError("ptx_options are not passed to ptxas in the sandbox (its broker builds the command)")
    enabled = getattr(nv, "is_enabled", lambda _opt, _mode: False)
    debug = ("none" if knobs.compilation.disable_line_info else "full" if knobs.nvidia.disable_ptxas_opt
             else "lineinfo")
    opt_level = 0 if knobs.nvidia.disable_ptxas_opt else (
        1 if any(enabled(opt, mode) for mode in ("consan", "fpsan")) else None)
    reply, cubin = client.request({"op": "assemble", "capability": int(capability),
                                   "fmad": bool(opt.enable_fp_fusion), "debug": debug, "opt_level": opt_level},
                                  src.encode("utf-8"))
    if not reply.get("ok"):
        raise PTXASError(f"`ptxas` failed ({reply.get('error') or 'code ' + str(reply.get('returncode'))})\n"
                         f"`ptxas` stderr:\n{reply.get('log', '')}")
    return cubin


def install_client(sock: socket.socket) -> str:
    """After the filter: route Triton's ``make_cubin`` and ``get_ptxas_version`` to the broker; a note."""
    from triton import knobs
    from triton.backends.nvidia import compiler as nv
    original = nv.CUDABackend.make_cubin
    signature = inspect.signature(original)
    if not {"src", "opt", "capability"} <= set(signature.parameters):
        return f"ptxas broker unused (Triton's make_cubin{signature} is not the expected one)"
    global CLIENT
    client = CLIENT = BrokerClient(sock)

    @functools.wraps(original)
    def make_cubin(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs).arguments
        return _assemble(client, bound["src"], bound["opt"], bound["capability"])

    @functools.lru_cache()
    def get_ptxas_version(arch: int = 80) -> str:
        mock = knobs.nvidia.mock_ptx_version
        return mock if mock is not None else client.version(arch)

    nv.CUDABackend.make_cubin = make_cubin
    nv.get_ptxas_version = get_ptxas_version
    return "ptxas through the broker"
