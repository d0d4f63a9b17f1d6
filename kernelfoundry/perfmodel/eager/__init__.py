"""The eager-PyTorch baseline, op family by op family: what ATen launches and what it costs.

``record`` runs a reference on meta tensors and keeps each aten op with its arguments;
``kernels_for`` (``rules.py`` and the ``rules_*.py`` modules) turns one op into the kernels ATen
launches on a CUDA GPU, each rule citing the ATen / cuBLAS / cuDNN behaviour it follows;
``kernels.py`` prices a kernel on a hardware spec and ``timeline.py`` adds the host.  See
``docs/perfmodel.md`` (eager baseline) and ``docs/fidelity.md`` (how well it matches).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..hardware import HardwareSpec
from .kernels import EagerKernel, kernel_seconds, kernel_terms
from .record import AtenCall, TensorMeta, record
from .rules import kernels_for
from .timeline import DO_BENCH, KERNELBENCH, TIMINGS, Timing, timeline_seconds

__all__ = ["AtenCall", "TensorMeta", "record", "EagerKernel", "kernel_seconds", "kernel_terms", "kernels_for",
           "Timing", "KERNELBENCH", "DO_BENCH", "TIMINGS", "timeline_seconds", "EagerEstimate", "estimate"]


@dataclass
class EagerEstimate:
    """An eager call priced on one spec: total seconds and each op's kernels."""

    seconds: float
    ops: list[tuple[str, list[tuple[EagerKernel, float]]]] = field(default_factory=list)

    @property
    def device_seconds(self) -> float:
        return sum(s for _, ks in self.ops for _, s in ks)

    def breakdown(self) -> list[str]:
        """One line per kernel: name and device time."""
        return [f"{k.name}: {s * 1e6:.1f} us" for _, ks in self.ops for k, s in ks]


def estimate(calls: list[AtenCall], spec: HardwareSpec, timing: Timing = KERNELBENCH) -> EagerEstimate:
    """Price recorded *calls* on *spec* as measured by *timing*."""
    ops = []
    for call in calls:
        ks = kernels_for(call, spec)
        ops.append((call.name, [(k, kernel_seconds(k, spec)) for k in ks]))
    seconds = timeline_seconds([[s for _, s in ks] for _, ks in ops], spec, timing) if ops else \
        spec.launch_overhead_us * 1e-6
    return EagerEstimate(seconds=seconds, ops=ops)
