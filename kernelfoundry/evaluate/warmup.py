"""Warm a fork server before it serves: run one trusted kernel through a check job and a trace job.

A freshly forked child pays, on its first launch, for everything torch and Triton
import or build lazily (torch's dispatch modes pull in ``torch._dynamo`` and sympy,
the interpreter builds its per-function state): about a second per job here, more
than the job's own work on a small kernel.  The fork server runs :func:`warm_up`
once, after its imports, so that every forked child starts with that work done
(through :func:`.child.entry.warm_up`, which hands it the child's job runner: the
child side imports this module, not the other way round).

The kernel below is ours (trusted) and exercises what candidates use most: a
``range`` loop, ``tl.dot``, reductions, ``exp``, masks, ``torch.empty`` under the
dispatch guard, the check runs' profiles, the span runs and the sampled trace.
It runs with the sandbox's environment (``TRITON_INTERPRET=1``, one thread) in the
server process only; a failure is reported and ignored (the children then just
start cold).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from ..harness.payload import REFERENCE_STUB

WARM_UP_SOURCE = '''\
"""Trusted warm-up kernel: rows of softmax(relu(a @ b))."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [16], "BLOCK_K": [16], "num_warps": [4], "num_stages": [1]}


@triton.jit
def warm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        rk = k * BLOCK_K + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    acc = tl.maximum(acc, 0.0)
    acc = tl.where(rn[None, :] < N, acc, float("-inf"))
    e = tl.exp(acc - tl.max(acc, axis=1)[:, None])
    out = e / tl.sum(e, axis=1)[:, None]
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], out.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(a, b, *, BLOCK_M, BLOCK_K, num_warps, num_stages):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    warm_kernel[(triton.cdiv(M, BLOCK_M),)](a, b, c, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=triton.next_power_of_2(N),
                                          BLOCK_K=BLOCK_K, num_warps=num_warps, num_stages=num_stages)
    return c
'''

WARM_UP_TASK = {
    "name": "warm_up", "level": 1, "reference": REFERENCE_STUB,
    "inputs": {"a": {"shape": ["M", "K"], "dtype": "float16"}, "b": {"shape": ["K", "N"], "dtype": "float16"}},
    "shapes": {"check": [{"M": 20, "N": 16, "K": 24}], "target": [{"M": 64, "N": 16, "K": 48}]},
    "tolerance": {"atol": 1e-2, "rtol": 1e-2}, "seeds": ["warm_up.py"], "hardware": ["h100"],
}


def warm_up(run_job: Callable[[dict[str, Any], Path], dict[str, Any]]) -> str | None:
    """Run the warm-up kernel's check and trace jobs in this process with *run_job* (the child's
    :func:`.child.entry.run_job`); None, or what went wrong."""
    from ..task import task_from_dict
    from .judge.correctness import plan_runs

    try:
        task = task_from_dict(WARM_UP_TASK, check_files=False)
        config = {"BLOCK_M": 16, "BLOCK_K": 16}
        payload = {"source": WARM_UP_SOURCE, "task": WARM_UP_TASK, "kernel_configs": [config],
                   "hints": {"num_warps": 4, "num_stages": 1}, "seed": 0}
        directory = Path(tempfile.mkdtemp(prefix="kf_warm_up_"))
        try:
            plan = plan_runs(task, [config], seed=0)
            check = run_job({**payload, "kind": "check", "runs": plan, "probe_configs": [config]},
                            directory / "check.bin")
            trace = run_job({**payload, "kind": "trace", "runs": plan[:1], "trace_programs": 2},
                            directory / "trace.bin")
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    except Exception as exc:  # noqa: BLE001 - best effort: children start cold
        return f"{type(exc).__name__}: {exc}"
    problems = [r.get("error") for r in (check.get("check"), trace.get("check"), trace.get("trace")) if r]
    problems = [p for p in problems if p]
    return "; ".join(problems) or None
