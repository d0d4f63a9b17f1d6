"""A hostile candidate in the compile job stays in the sandbox; its failures are never cached as verdicts.

These sources never pass the hack gate; they go straight to ``compile_candidate``
(whose sandbox must hold on its own).  Their signatures are written by hand: a
hostile module is never imported in the test process.
"""

from __future__ import annotations

import os
import uuid

from kernelfoundry.compiler import compile_candidate
from kernelfoundry.sandbox.process import SandboxLimits

KERNEL = '''
@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=offs < n)
'''
SIGNATURE = {"kernel": "relu_kernel", "num_warps": 4, "num_stages": 1,
             "args": [{"name": "x_ptr", "kind": "pointer", "dtype": "fp32", "div16": True},
                      {"name": "y_ptr", "kind": "pointer", "dtype": "fp32", "div16": True},
                      {"name": "n", "kind": "int", "dtype": "i32", "div16": True, "equals_one": False},
                      {"name": "BLOCK", "kind": "constexpr", "value": 256}]}


def _source(prelude: str) -> str:
    return "import os, sys, socket\nimport triton\nimport triton.language as tl\n" + prelude + KERNEL


def test_escape_attempts_at_import_are_contained(compile_cache, tmp_path):
    marker = tmp_path / f"escaped-{uuid.uuid4().hex}"
    prelude = f'''
results = []
for attempt in (lambda: os.system("touch {marker}"), lambda: os.fork(),
                lambda: socket.create_connection(("127.0.0.1", 22), timeout=1),
                lambda: open("{marker}", "w").write("x"), lambda: os.kill(1, 9)):
    try:
        results.append(repr(attempt()))
    except BaseException as exc:
        results.append(type(exc).__name__)
print("escape attempts:", results)
'''
    report = compile_candidate(_source(prelude), {"default": [SIGNATURE]}, ["h100"], cache=compile_cache)
    assert not marker.exists()
    kernel = report.hardware["h100"].configs["default"].kernels[0]
    assert kernel.ok and kernel.resources.registers > 0        # the kernel itself still compiles
    assert report.job["mode"] in ("fork", "spawn")


def test_hanging_import_is_killed_and_not_cached(compile_cache):
    source = _source("while True:\n    pass\n")
    limits = SandboxLimits(wall_s=3.0)
    report = compile_candidate(source, {"default": [SIGNATURE]}, ["h100", "mi300x"], cache=compile_cache,
                               limits=limits)
    for name in ("h100", "mi300x"):
        hw = report.hardware[name]
        assert hw.status == "error" and "timed out after 3 s" in hw.reason, hw.reason
    again = compile_candidate(source, {"default": [SIGNATURE]}, ["h100"], cache=compile_cache, limits=limits)
    assert again.cache_hits == 0 and again.cache_misses == 1     # a killed job is not a compiler verdict


def test_forged_job_result_is_validated(compile_cache):
    prelude = '''
import json
fake = {"load_error": None, "done": True, "results": {}}
with open(sys.argv[1]) as f:
    for req in json.load(f)["requests"]:
        fake["results"][req["id"]] = {"ok": True, "error": "", "asm": {"ptx": "not ptx"},
                                      "metadata": {"shared": -5, "num_warps": 4}}
with open(sys.argv[2], "w") as f:
    json.dump(fake, f)
os._exit(0)
'''
    report = compile_candidate(_source(prelude), {"default": [SIGNATURE]}, ["h100"], cache=compile_cache)
    hw = report.hardware["h100"]
    assert hw.status == "error" and "malformed answer (metadata 'shared' is not a non-negative int)" in hw.reason
    assert report.cache_misses == 1 and compile_cache.peek(hw.configs["default"].kernels[0].key) is None


def test_a_compile_that_runs_out_of_time_fails_alone(compile_cache):
    """The job is killed in the slow compile; that one fails, the next one runs in a second job."""
    slow = '''
@triton.jit
def slow_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(200000):
        acc += tl.load(x_ptr + offs + i, mask=offs < n)
    tl.store(y_ptr + offs, acc, mask=offs < n)
'''
    sigs = {"slow": [dict(SIGNATURE, kernel="slow_kernel")], "fast": [SIGNATURE]}
    report = compile_candidate(_source(slow), sigs, ["h100"], cache=compile_cache, limits=SandboxLimits(wall_s=3.0))
    configs = report.hardware["h100"].configs
    assert configs["slow"].error == "slow_kernel: compiling this kernel timed out after 3 s"
    assert configs["fast"].ok and report.hardware["h100"].status == "partial"
    assert report.job["attempts"] == 2 and report.job["reasons"] == ["timed out after 3 s"]
