"""Timers: ``time(fn, hint) -> Timing`` (median seconds and spread over repetitions).

``DoBenchTimer`` uses ``triton.testing.do_bench`` (warm-up, L2 flushed with its cache buffer
before every repetition, every repetition's time kept); ``FakeTimer`` never calls *fn*: it
returns a known function of the model's prediction (*hint*), so the whole device path can run
on a CPU in tests and calibration can be checked against factors it must recover.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


@dataclass(frozen=True)
class Timing:
    """One timed call: the median and the spread (p20-p80 width / median) over repetitions."""

    median_s: float
    spread: float
    reps: int

    def to_dict(self) -> dict[str, Any]:
        return {"median_s": self.median_s, "spread": self.spread, "reps": self.reps}


@dataclass(frozen=True)
class Hint:
    """What the model predicted for the timed call (only a fake timer reads it)."""

    predicted_s: float
    bound: str = ""             # the model's bound term ("dram", "compute-matrix", ...); "eager" for a reference
    launch_s: float = 0.0       # the launch-overhead part of predicted_s
    launches: int = 1


class Timer(Protocol):
    name: str

    def time(self, fn: Callable[[], Any], hint: Hint | None = None) -> Timing: ...


def summarize(times_s: list[float]) -> Timing:
    """Median and p20-p80 spread (relative to the median) of repetition times in seconds."""
    if not times_s:
        raise ValueError("no repetitions were timed")
    ordered = sorted(times_s)
    med = statistics.median(ordered)

    def q(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(p * (len(ordered) - 1))))]
    return Timing(median_s=med, spread=(q(0.8) - q(0.2)) / med if med > 0 else 0.0, reps=len(ordered))


class DoBenchTimer:
    """``triton.testing.do_bench``: *warmup_ms* of warm-up, then *rep_ms* of repetitions."""

    name = "do_bench"

    def __init__(self, warmup_ms: float = 25.0, rep_ms: float = 100.0):
        self.warmup_ms, self.rep_ms = warmup_ms, rep_ms

    def time(self, fn: Callable[[], Any], hint: Hint | None = None) -> Timing:
        from triton.testing import do_bench
        times_ms = do_bench(fn, warmup=self.warmup_ms, rep=self.rep_ms, return_mode="all")
        return summarize([t * 1e-3 for t in times_ms])


@dataclass
class FakeTimer:
    """measured = factor[bound] x (predicted - launch part) + launches x overhead_s; eager calls:
    ``eager_factor`` x predicted.  With *noise* > 0, a deterministic relative wobble per call."""

    factors: dict[str, float] = field(default_factory=dict)
    overhead_s: float | None = None          # None: keep the model's own launch part
    eager_factor: float = 1.0
    noise: float = 0.0
    name: str = "fake"
    calls: int = 0

    def time(self, fn: Callable[[], Any], hint: Hint | None = None) -> Timing:
        if hint is None or not math.isfinite(hint.predicted_s) or hint.predicted_s <= 0:
            raise ValueError("the fake timer needs the model's finite, positive prediction")
        self.calls += 1
        if hint.bound == "eager":
            value = self.eager_factor * hint.predicted_s
        else:
            launch = hint.launch_s if self.overhead_s is None else hint.launches * self.overhead_s
            value = self.factors.get(hint.bound, 1.0) * (hint.predicted_s - hint.launch_s) + launch
        if self.noise:
            value *= 1.0 + self.noise * math.sin(12.9898 * self.calls)
        return Timing(median_s=value, spread=abs(self.noise), reps=1)

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "fake", "factors": dict(self.factors), "overhead_s": self.overhead_s,
                "eager_factor": self.eager_factor, "noise": self.noise}


def timer_from_spec(spec: dict[str, Any]) -> Timer:
    """A timer from plain data (it crosses into the sandboxed child): ``{"kind": "do_bench" | "fake", ...}``."""
    kind = spec.get("kind")
    if kind == "do_bench":
        return DoBenchTimer(float(spec.get("warmup_ms", 25.0)), float(spec.get("rep_ms", 100.0)))
    if kind == "fake":
        return FakeTimer(factors={str(k): float(v) for k, v in (spec.get("factors") or {}).items()},
                         overhead_s=None if spec.get("overhead_s") is None else float(spec["overhead_s"]),
                         eager_factor=float(spec.get("eager_factor", 1.0)), noise=float(spec.get("noise", 0.0)))
    raise ValueError(f"timer kind must be 'do_bench' or 'fake'; got {kind!r}")
