"""Model-gate plausibility checks: work the trace cannot have missed.

The trace runs a few programs of each launch and a few trips of each loop, so a
kernel can hide work from it: do it in programs the sample skips, in loop trips
counted by a sampled idle trip, only when the (uninitialised, mostly zero) trace
inputs are non-zero, or only at check shapes.  Two checks catch what any of these
leaves behind:

- **Output coverage**: at every target shape and config, the traced stores,
  scaled up to all programs, must cover at least half of the reference output's
  bytes. A kernel that writes its output stores all of it; sampling error of an
  honest kernel stays far from a factor of two.
- **Speed of light**: no hardware may be predicted faster than its speed of light
  (the larger of the compulsory-traffic and compute bounds of the reference).
"""

from __future__ import annotations

from typing import Any

from ..task import Task
from .records import ConfigTrace

#: Traced stores must reach this share of the output bytes.
MIN_OUTPUT_COVERAGE = 0.5
#: Predictions above this fraction of speed-of-light are impossible (5% model slack).
MAX_SOL_FRACTION = 1.05


def stored_bytes(trace: ConfigTrace) -> float:
    """Bytes all programs of all launches store, estimated from the sampled ones (atomics included)."""
    return sum(launch.store_bytes * launch.num_programs for launch in trace.launches)


def implausible(task: Task, traces: list[ConfigTrace], hardware: dict[str, Any]) -> str | None:
    """Why the traces or the scores cannot be those of an honest kernel; None if they can."""
    from ..perfmodel.baseline import profile_reference
    for trace in traces:
        need = profile_reference(task, trace.shape).output_bytes
        stored = stored_bytes(trace)
        if need > 0 and stored < MIN_OUTPUT_COVERAGE * need:
            shape = ", ".join(f"{k}={v}" for k, v in trace.shape.items())
            config = ", ".join(f"{k}={v}" for k, v in trace.config.items()) or "default"
            return (f"at shape {{{shape}}} with config {config} the traced programs store {stored:.3g} bytes, "
                    f"{stored / need:.1%} of the {need:.3g}-byte output: the trace samples a few programs and "
                    "loop trips, so the work must be spread evenly over them. Every program and every loop "
                    "trip should do its share, whatever the input values and shapes.")
    for name, score in hardware.items():
        fraction = float(getattr(score, "sol_fraction", 0.0) or 0.0)
        if fraction > MAX_SOL_FRACTION:
            return (f"the model predicts {fraction:.0%} of {name}'s speed of light, which no kernel can reach: "
                    "the trace missed work (done in programs or loop trips it did not sample).")
    return None
