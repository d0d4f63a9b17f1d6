"""One task's verifier: the task, its hardware, typed options, the caches and a device step, in one object.

``Verifier(task, hardware, options, ...).verify(source)`` is what both the ``verify`` command and a
search worker call, so a verdict is assembled in one place: the verifier's seed from the source, the
verdict cache (a source verified before is read back), every gate (:func:`.pipeline.verify`), then the
device step when one is given (a measurement that can refute the model's verdict).

The device step is passed in by the caller (``measure`` sits above this layer): any object with
``confirm(verdict: dict, result: VerifyResult, source: str, seed: int) -> dict`` that returns the
verdict with the device's measurement merged in.  Verdicts with a device step are never cached: a
measurement depends on the machine, not only on the source.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Protocol

from ..candidate import verify_seed
from ..records import VerifyResult
from ..task import Task
from .pipeline import DEFAULT_TIMEOUT_S, default_limits, verify


@dataclass(frozen=True)
class VerifyOptions:
    """What a verdict depends on besides the task, the hardware and the source (docs/verifier.md)."""
    max_kernel_configs: int = 8      # tuning configs sampled from the PARAMS space
    tune: bool = True                # False: only the default config (an ablation)
    compile: bool = True             # the compile gate (Triton's compiler for each real GPU)
    compile_top_k: int = 1           # configs per hardware compiled per round (compile gate)
    trace_programs: int = 4          # programs traced densely per launch
    timeout_s: float = DEFAULT_TIMEOUT_S     # CPU seconds per sandboxed job (default_limits)
    mode: str | None = None          # sandbox mode: "fork", "spawn" or None (the default)

    def __post_init__(self) -> None:
        if self.max_kernel_configs < 1:
            raise ValueError(f"max_kernel_configs must be at least 1; got {self.max_kernel_configs}")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be positive; got {self.timeout_s}")
        if self.mode not in (None, "fork", "spawn"):
            raise ValueError(f"mode must be 'fork', 'spawn' or None; got {self.mode!r}")

    def to_dict(self) -> dict[str, Any]:
        """The fields that differ from the defaults (what a verdict cache's key and a Ray actor carry)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "VerifyOptions":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data or {}) - known)
        if unknown:
            raise ValueError(f"unknown verify options {unknown}; known: {sorted(known)}")
        return cls(**(data or {}))


class DeviceStep(Protocol):
    def confirm(self, verdict: dict[str, Any], result: VerifyResult, source: str, seed: int) -> dict[str, Any]:
        ...


class Verifier:
    """Every gate on one task's candidates, with the run's caches and device (see the module docstring)."""

    def __init__(self, task: Task, hardware: list[str] | None = None, options: VerifyOptions | None = None, *,
                 verdict_cache: Any = None, trace_cache: Any = None, compile_cache: Any = None,
                 device: DeviceStep | None = None, side_by_side: bool | None = None):
        self.task = task
        self.side_by_side = side_by_side      # extra jobs on idle CPUs (pipeline.verify); never changes a verdict
        self.hardware = list(hardware or task.hardware)
        self.options = options or VerifyOptions()
        self.verdict_cache = verdict_cache
        self.trace_cache = trace_cache
        self.compile_cache = compile_cache
        self.device = device

    def run_gates(self, source: str, seed: int | None = None) -> VerifyResult:
        """Every gate and the model on *source* (no cache, no device); *seed* defaults to the source's."""
        o = self.options
        return verify(self.task, source, self.hardware, seed=verify_seed(source) if seed is None else seed,
                      limits=default_limits(self.task, o.timeout_s), max_kernel_configs=o.max_kernel_configs,
                      trace_programs=o.trace_programs, tune=o.tune, mode=o.mode, compile=o.compile,
                      compile_top_k=o.compile_top_k, compile_cache=self.compile_cache, trace_cache=self.trace_cache,
                      side_by_side=self.side_by_side)

    def verify(self, source: str, seed: int | None = None) -> tuple[VerifyResult | None, dict[str, Any]]:
        """``(result, verdict)``: the gates' result (None when the verdict came from the cache) and the
        verdict as a dict (``cached: True`` when read back; the device's measurement merged in)."""
        seed = verify_seed(source) if seed is None else seed
        cache = self.verdict_cache if self.device is None else None
        if cache is not None:
            hit = cache.get(source)
            if hit is not None:
                return None, {**hit, "cached": True}
        result = self.run_gates(source, seed)
        verdict = result.to_dict()
        if self.device is not None and result.passed:
            verdict = self.device.confirm(verdict, result, source, seed)
        elif cache is not None:
            cache.put(source, verdict)
        return result, verdict


__all__ = ["DeviceStep", "Verifier", "VerifyOptions"]
