"""Run the sandboxed compile job for a batch of requests and validate what it returns.

One job compiles every request of a candidate (the fork server's start is paid
once per process, a job costs ~0.05 s plus the compiles).  The job's output is
untrusted (the candidate ran in that process), so each answer is checked for
shape and size and matched to a request the driver made.  A job that is killed
(time, memory) still returns what it finished: the request it died in fails
with the sandbox's reason, and the ones after it run again in a new job.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from ..sandbox import SandboxLimits, run_sandboxed

JOB_MODULE = "kernelfoundry.compiler.job"
JOB_ENV = {"TRITON_INTERPRET": "0", "TRITON_DEFAULT_FP_FUSION": "1"}
MAX_ATTEMPTS = 3
_MAX_ERROR = 4000


@dataclass
class JobAnswer:
    """The job's answer for one request (validated): assembly, Triton metadata, stage seconds."""

    ok: bool
    error: str = ""
    asm: dict[str, str] = field(default_factory=dict)       # "ptx" | "amdgcn" -> text
    hsaco: bytes = b""
    metadata: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    cacheable: bool = True                                   # a compiler verdict (not a sandbox accident)


def default_limits(n_requests: int) -> SandboxLimits:
    """Wall time grows with the batch: 30 s + 10 s per request, at most 300 s."""
    return SandboxLimits(wall_s=float(min(300, 30 + 10 * n_requests)))


def _validate(raw: Any, vendor: str) -> JobAnswer:
    if not isinstance(raw, dict) or not isinstance(raw.get("ok"), bool):
        raise ValueError("not an object with a boolean 'ok'")
    error = raw.get("error", "")
    if not isinstance(error, str):
        raise ValueError("'error' is not a string")
    seconds = {str(k): float(v) for k, v in (raw.get("seconds") or {}).items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if not raw["ok"]:
        return JobAnswer(ok=False, error=error[:_MAX_ERROR] or "the compiler failed without a message",
                         seconds=seconds)
    asm, metadata = raw.get("asm"), raw.get("metadata")
    if not isinstance(asm, dict) or not isinstance(metadata, dict):
        raise ValueError("'asm' or 'metadata' missing")
    text_kind = "ptx" if vendor == "nvidia" else "amdgcn"
    if not isinstance(asm.get(text_kind), str) or not asm[text_kind]:
        raise ValueError(f"no {text_kind} text")
    hsaco = b""
    if vendor == "amd":
        try:
            hsaco = base64.b64decode(str(asm.get("hsaco_b64", "")), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the HSACO is not valid base64") from None
    meta = {k: v for k, v in metadata.items() if isinstance(k, str) and isinstance(v, (int, float, str, bool))}
    for name in ("shared", "num_warps"):
        if not isinstance(meta.get(name), int) or isinstance(meta.get(name), bool) or meta[name] < 0:
            raise ValueError(f"metadata '{name}' is not a non-negative int")
    return JobAnswer(ok=True, asm={text_kind: asm[text_kind]}, hsaco=hsaco, metadata=meta, seconds=seconds)


def run_compile_job(source: str, requests: list[dict[str, Any]], vendors: dict[str, str], *,
                    limits: SandboxLimits | None = None, mode: str | None = None
                    ) -> tuple[dict[str, JobAnswer], dict[str, Any]]:
    """Compile *requests* (each with an ``id``) in the sandbox; ``(answers by id, job summary)``.

    *vendors* maps a request id to "nvidia" or "amd" (what its answer must hold).
    Every request gets an answer; failures that are not the compiler's verdict
    (a killed job, a malformed answer) are marked ``cacheable=False``.
    """
    answers: dict[str, JobAnswer] = {}
    pending = list(requests)
    summary: dict[str, Any] = {"attempts": 0, "wall_s": 0.0, "mode": None, "reasons": []}
    while pending and summary["attempts"] < MAX_ATTEMPTS:
        summary["attempts"] += 1
        outcome = run_sandboxed(JOB_MODULE, {"source": source, "requests": pending},
                                limits or default_limits(len(pending)), mode=mode, env=JOB_ENV)
        summary["wall_s"] = round(summary["wall_s"] + outcome.wall_s, 4)
        summary["mode"] = outcome.mode
        result = outcome.result if isinstance(outcome.result, dict) else {}
        if outcome.reason:
            summary["reasons"].append(outcome.reason)
        fatal = result.get("load_error") or (f"the compile job failed: {result['error']}" if result.get("error")
                                              else None)
        if isinstance(fatal, str) and fatal:
            for req in pending:
                answers[req["id"]] = JobAnswer(ok=False, error=fatal[:_MAX_ERROR], cacheable=False)
            return answers, summary
        got = result.get("results") if isinstance(result.get("results"), dict) else {}
        for req in pending:
            if req["id"] in got:
                try:
                    answers[req["id"]] = _validate(got[req["id"]], vendors[req["id"]])
                except (ValueError, TypeError, AttributeError) as exc:
                    answers[req["id"]] = JobAnswer(ok=False, cacheable=False,
                                                   error=f"the compile job returned a malformed answer ({exc})")
        pending = [r for r in pending if r["id"] not in answers]
        if not pending:
            break
        died_in = (outcome.progress or "").removeprefix("compile ") if not outcome.ok else None
        if outcome.ok and result.get("done"):
            why = "the compile job finished without answering it"
        elif outcome.progress == "load" or not outcome.progress:
            why = f"the compile job failed while importing the module: {_job_reason(outcome)}"
        else:
            why = None
        if why is not None:
            for req in pending:
                answers[req["id"]] = JobAnswer(ok=False, error=why, cacheable=False)
            return answers, summary
        for req in pending:
            if req["id"] == died_in:
                answers[req["id"]] = JobAnswer(ok=False, cacheable=False,
                                               error=f"compiling this kernel {_job_reason(outcome)}")
        pending = [r for r in pending if r["id"] not in answers]
    for req in pending:
        answers[req["id"]] = JobAnswer(ok=False, cacheable=False,
                                       error=f"not compiled: the compile job failed {MAX_ATTEMPTS} times")
    return answers, summary


def _job_reason(outcome) -> str:
    text = outcome.reason or "failed"
    text = f"was {text}" if text.startswith("killed") else text
    if not outcome.killed_by and outcome.output_tail.strip():
        text += f"; last output: {outcome.output_tail.strip()[-600:]}"
    return text
