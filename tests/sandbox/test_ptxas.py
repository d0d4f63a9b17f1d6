"""The device job's ptxas broker: a real compile to a cubin inside the sandbox with seccomp on."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from kernelfoundry.compiler import ptxas_broker as broker
from kernelfoundry.sandbox.process import SandboxLimits, run_sandboxed

# A job module run inside the sandbox: tries execve, then compiles a kernel for sm_90 (payload["do"]).
PROBE = r'''
import json, os, sys

import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


def raw(client, header, body):
    from kernelfoundry.sandbox.broker import recv_frame, send_frame
    if isinstance(header, bytes):
        import struct
        client.sock.sendall(struct.pack("!II", len(header), len(body)) + header + body)
    else:
        send_frame(client.sock, header, body)
    got = recv_frame(client.sock, 1 << 20, 1 << 30)
    return json.loads(got[0])


def main():
    inp, out = sys.argv[1:3]
    p = json.load(open(inp))
    res = {}
    try:
        os.execv("/bin/true", ["true"])
    except OSError as exc:
        res["exec"] = f"refused: errno {exc.errno}"
    from kernelfoundry.compiler import ptxas_broker as sandbox_ptxas
    res["client"] = sandbox_ptxas.CLIENT is not None
    if p["do"] == "compile":
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import ASTSource
        try:
            kernel = triton.compile(ASTSource(add_one, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                                              {"BLOCK": 128}), target=GPUTarget("cuda", 90, 32))
            cubin = kernel.asm["cubin"]
            res.update(cubin_head=cubin[:4].hex(), cubin_bytes=len(cubin), name=kernel.metadata.name)
        except Exception as exc:
            res["error"] = f"{type(exc).__name__}: {exc}"[:3000]
    elif p["do"] == "hostile":
        c = sandbox_ptxas.CLIENT
        good = {"op": "assemble", "capability": 90, "fmad": True, "debug": "lineinfo", "opt_level": None}
        ptx = b".version 8.0\n.target sm_90a\n.address_size 64\n"
        res["replies"] = [
            raw(c, {**good, "flags": ["-o", "/tmp/pwned"]}, ptx),
            raw(c, {**good, "capability": "90 --output-file=/tmp/pwned"}, ptx),
            raw(c, {**good, "debug": "-g --output-file=/tmp/pwned"}, ptx),
            raw(c, {**good, "opt_level": "0 -o /tmp/pwned"}, ptx),
            raw(c, {**good, "op": "exec"}, ptx),
            raw(c, good, b"\xff\xfe\x00\x01binary"),
            raw(c, good, b"." * (sandbox_ptxas.MAX_PTX_BYTES + 1)),
            raw(c, b"{not json", b""),
            raw(c, b"x" * 5000, b""),
        ]
        res["version"] = c.version(90)[:200]
        res["pwned"] = os.path.exists("/tmp/pwned")
    elif p["do"] == "devices":
        import stat
        res["full_is_char_device"] = stat.S_ISCHR(os.stat("/dev/full").st_mode)
        try:
            with open("/dev/full", "wb", buffering=0) as f:
                f.write(b"x")
        except OSError as exc:
            res["full_write_errno"] = exc.errno
        res["sys_listed"] = bool(os.listdir("/sys/devices"))
        res["sys_writable"] = os.access("/sys/devices", os.W_OK)
        res["zero_visible"] = os.path.exists("/dev/zero")
    json.dump(res, open(out, "w"))


if __name__ == "__main__":
    main()
'''

LIMITS = SandboxLimits(wall_s=120.0, rss_bytes=3 << 30, max_threads=128)


@pytest.fixture(scope="module")
def probe(job_module):
    return job_module(PROBE, "kf_ptxas_probe")


def _run(probe, do, gpu, mode="fork", with_broker=True):
    out = run_sandboxed(probe, {"do": do}, LIMITS, mode=mode, env={"TRITON_INTERPRET": "0"}, gpu=gpu,
                        broker=broker.PTXAS_BROKER if gpu and with_broker else None)
    assert out.ok, out
    assert "seccomp" in out.isolation, out.isolation
    return out


@pytest.mark.parametrize("mode", ["fork", "spawn"])
def test_compiles_to_a_cubin_through_the_broker_with_exec_refused(probe, mode):
    out = _run(probe, "compile", gpu=True, mode=mode)
    res = out.result
    assert res["exec"].startswith("refused"), res
    assert res.get("error") is None, res.get("error")
    assert res["cubin_head"] == b"\x7fELF".hex() and res["cubin_bytes"] > 1000
    assert res["name"] == "add_one"
    assert any(n.startswith("ptxas broker (pid") for n in out.isolation)
    assert "ptxas through the broker" in out.isolation


def test_hostile_requests_get_clean_errors_and_run_nothing(probe):
    res = _run(probe, "hostile", gpu=True).result
    replies = res["replies"]
    assert all(r == {"ok": False, "error": r["error"]} and r["error"] for r in replies), replies
    assert "unknown request fields ['flags']" in replies[0]["error"]
    assert "not UTF-8" in replies[5]["error"] or "NUL" in replies[5]["error"]
    assert "PTX over" in replies[6]["error"]
    assert "not JSON" in replies[7]["error"] and "header over" in replies[8]["error"]
    assert "Cuda compilation tools" in res["version"]      # the broker still answers
    assert res["pwned"] is False


def test_without_the_flag_the_sandbox_is_unchanged(probe):
    out = _run(probe, "compile", gpu=False)
    res = out.result
    assert res["exec"].startswith("refused") and res["client"] is False
    assert "Operation not permitted" in res["error"] or "PermissionError" in res["error"], res
    assert not any("ptxas" in n for n in out.isolation)


class _Recorder:
    """A runner that records argv instead of running anything."""

    def __init__(self):
        self.calls = []

    def __call__(self, argv, inputs, outputs):
        self.calls.append(argv)
        from kernelfoundry.compiler.tools import ToolResult
        return ToolResult(0, "", "", 0.0, outputs={"kernel.cubin": b"\x7fELF fake"})


def _serve_in_thread(runner):
    ours, theirs = socket.socketpair()
    thread = threading.Thread(target=broker.serve, args=(theirs, runner), daemon=True)
    thread.start()
    return broker.BrokerClient(ours), thread


def test_the_broker_runs_only_its_own_ptxas_command():
    """Hostile requests never reach the runner; a good one runs exactly ptxas_argv around Triton's ptxas."""
    from triton.backends.nvidia.compiler import get_ptxas
    from kernelfoundry.compiler.nvidia import ptxas_argv
    recorder = _Recorder()
    client, thread = _serve_in_thread(recorder)
    good = {"op": "assemble", "capability": 80, "fmad": False, "debug": "full", "opt_level": 0}
    for bad in ({**good, "argv": ["/bin/sh"]}, {**good, "capability": True}, {**good, "fmad": "yes"},
                {**good, "opt_level": 0.0}, {**good, "opt_level": False}, {**good, "debug": ["-g"]}, [good]):
        reply, _ = client.request(bad, b"ptx")
        assert reply["ok"] is False and reply["error"], bad
    assert recorder.calls == []
    reply, cubin = client.request(good, b".version 8.0\n")
    assert reply["ok"] and cubin == b"\x7fELF fake"
    assert recorder.calls == [ptxas_argv(get_ptxas(80).path, "sm_80", fmad=False, debug="full", opt_level=0)]
    assert recorder.calls[0][0].endswith("/ptxas") and "--opt-level" in recorder.calls[0]
    client.sock.close()
    thread.join(5)
    assert not thread.is_alive()                  # the broker ends when the child's end closes


@pytest.mark.skipif(os.geteuid() != 0, reason="the minimal root needs a root driver")
def test_gpu_paths_are_bound_read_only_with_device_files_usable(probe, monkeypatch):
    """/dev/full stands in for a GPU node (no GPU here): inside, it is the host's character device and
    answers ENOSPC (not EROFS) to a write; the /sys part is there, read-only."""
    import errno
    from kernelfoundry.sandbox import devices as sandbox_devices
    monkeypatch.setattr(sandbox_devices, "gpu_spec", lambda: {"prepare_driver": False,
                                                              "device_paths": ["/dev/full", "/sys/devices"],
                                                              "env": {}})
    out = _run(probe, "devices", gpu=True, mode="spawn", with_broker=False)
    res = out.result
    assert res["full_is_char_device"] and res["full_write_errno"] == errno.ENOSPC
    assert res["sys_listed"] and not res["sys_writable"] and res["zero_visible"]
    assert "gpu paths: /dev/full /sys/devices" in out.isolation


def test_a_broker_must_be_a_module_of_the_package_with_both_hooks(probe):
    """The spec names a broker by module; anything else fails in the driver, before a child starts."""
    for bad in ("os", "kernelfoundry.sandbox.fs; rm -rf /", "kernelfoundry.records"):
        with pytest.raises(ValueError, match="broker"):
            run_sandboxed(probe, {"do": "devices"}, LIMITS, mode="spawn", broker=bad)
