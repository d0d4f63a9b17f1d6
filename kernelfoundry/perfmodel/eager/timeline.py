"""Host and GPU in one timeline: what an event-timed eager call measures.

The host dispatches op after op (``eager_op_overhead_us`` each, after ``host_call_us`` of Python
and module-call overhead); the GPU runs each op's kernels as soon as they are launched and the
previous kernel has finished.  The timed interval starts when the GPU has finished the L2 flush
that precedes every timed call (both harnesses flush L2), so the host has a head start of the
flush's duration; it ends at the end event, which the host records only after the call
returns.  Small problems become host-bound only when the host falls further behind.

* ``KERNELBENCH``: synchronise, fill a 256 MiB buffer (L2 flush), start event, one call, end
  event, synchronise (KernelBench ``timing.py``).
* ``DO_BENCH``: ``triton.testing.do_bench`` never synchronises between calls, so the host runs
  ahead by many iterations whenever the GPU is the slower side (every iteration also zeroes a
  256 MB flush buffer): the interval holds the GPU time only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hardware import HardwareSpec
from .kernels import copy_bandwidth

#: Host time from the start event to the first op of a module call (nn.Module __call__, Python):
#: approx, the 25-40 us per call seen on small KernelBench problems.
HOST_CALL_US = 30.0
#: Host time from issuing the flush to recording the start event (allocation from the caching
#: allocator, the fill's launch, the event): approx.
HOST_FLUSH_US = 15.0
#: Host time from the last op's launch to the end event (returning from the call, recording
#: the event): the end event cannot be stamped earlier, however soon the GPU is done.  Approx.
HOST_RETURN_US = 10.0


@dataclass(frozen=True)
class Timing:
    """How a measurement was taken."""

    name: str
    flush_bytes: float          # bytes the L2 flush writes right before the timed call
    host_ahead: bool            # the host queues later calls while the GPU works (no sync per call)
    host_call_us: float = HOST_CALL_US


KERNELBENCH = Timing("kernelbench", flush_bytes=256 * 2 ** 20, host_ahead=False)
DO_BENCH = Timing("do_bench", flush_bytes=256e6, host_ahead=True, host_call_us=0.0)
TIMINGS = {t.name: t for t in (KERNELBENCH, DO_BENCH)}


def timeline_seconds(ops: list[list[float]], spec: HardwareSpec, timing: Timing = KERNELBENCH) -> float:
    """Event-timed seconds of a call whose op *i* launches kernels of the given device seconds."""
    if timing.host_ahead:
        return sum(sum(k) for k in ops)
    head_start = timing.flush_bytes / copy_bandwidth(spec) - HOST_FLUSH_US * 1e-6
    host = timing.host_call_us * 1e-6 - head_start     # 0 = the GPU starts the timed interval
    gpu = 0.0
    for kernels in ops:
        host += spec.eager_op_overhead_us * 1e-6
        for seconds in kernels:
            gpu = max(gpu, host) + seconds
    return max(gpu, host + HOST_RETURN_US * 1e-6)
