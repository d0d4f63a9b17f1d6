"""One eager GPU kernel and its device time on a hardware spec.

Each rule (``rules_*.py``) turns an aten call into the kernels ATen launches for it, described
by what the roofline needs and by the launch shape that decides whether the kernel can keep
enough bytes in flight:

    t = max(bytes / (BW x mem_eff),  flops / (rate x compute_eff),  waves x rounds x tau)
        + epilogue bytes / BW + launch_overhead

* ``BW`` is the achievable copy bandwidth of the spec (``dram_tbps x dram_efficiency``:
  the copy anchors) and ``mem_eff`` the kernel family's share of it.
* The compute rate is the spec's matrix peak for the kernel's math (``tc:<dtype>``), its fp32
  vector rate (``fp32``: FMA = 2 flops) or its lane issue rate (``lanes``: instructions per
  second over all cores, vector fp32 peak / 2) for index-heavy kernels such as pooling.
* The latency term is Little's law for kernels with few blocks or a serial loop per block:
  ``rounds`` dependent load rounds per block, ``waves`` = blocks / (cores x resident blocks),
  one round = ``tau``: ``ROUND_TRIP_DRAM_LATENCIES`` x the spec's DRAM latency.
* GEMM epilogues store their tile after the K loop; that store does not overlap the math
  (``serial_bytes``: KernelBench L1-7 and L1-9, K = 64 and 32, take compute + C store).
* ``launch_overhead`` (the spec's ``launch_overhead_us``) is the fixed device-side cost of a
  kernel launched back to back in a stream (front end, ramp-up, tail).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..hardware import HardwareSpec

#: One dependent round of global loads inside a block's loop (load, reduce, barrier) in units
#: of the spec's DRAM latency.  Fitted on the H100 set: LayerNorm over 16 rows of 4M elements
#: (KernelBench L1-40: 16 blocks, 2 x 4096 rounds of 4 KB, 8.1 ms) gives 0.99 us = 1.8 x 550 ns.
ROUND_TRIP_DRAM_LATENCIES = 1.8


@dataclass
class EagerKernel:
    """One launch: traffic, math and launch shape."""

    name: str                      # what ATen runs, e.g. "softmax, block per row, 3 reads"
    read_bytes: float = 0.0        # DRAM bytes (after the rule's cache decisions)
    write_bytes: float = 0.0
    mem_eff: float = 1.0           # share of the achievable copy bandwidth
    flops: float = 0.0
    rate: str = "fp32"             # "fp32" | "lanes" | "tc:<dtype class>"
    compute_eff: float = 1.0
    blocks: float = 0.0            # 0: enough parallelism (no latency term)
    threads: int = 256
    rounds: float = 0.0            # dependent load rounds per block
    serial_bytes: float = 0.0      # bytes written after the main loop, not overlapped (GEMM epilogue)
    notes: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> float:
        return self.read_bytes + self.write_bytes


def resident_blocks(spec: HardwareSpec, threads: int) -> int:
    """Blocks of *threads* one core holds at once (threads and block limits only)."""
    by_threads = (spec.max_threads_per_core or 2048) // max(threads, 1)
    return max(1, min(spec.max_programs_per_core, by_threads))


def copy_bandwidth(spec: HardwareSpec) -> float:
    """Achievable DRAM bandwidth in bytes/s (the copy anchor of the spec)."""
    return spec.dram_tbps * 1e12 * spec.dram_efficiency


def compute_rate(spec: HardwareSpec, rate: str) -> float:
    """FLOP/s (or lane instructions/s for ``lanes``) of a rate class on *spec*."""
    if rate == "lanes":
        return spec.vector_peak("fp32") / 2.0
    if rate.startswith("tc:"):
        peak = spec.matrix_peak(rate[3:])
        if not peak and rate == "tc:fp32":
            # a matrix unit without an fp32 / TF32 rate (Ascend's cube) runs fp32 convolutions in a
            # reduced-precision mode (torch_npu's HF32 default) at about half its fp16 rate (approx)
            peak = spec.matrix_peak("fp16") / 2.0
        return peak or spec.vector_peak("fp32")
    return spec.vector_peak(rate)


def kernel_terms(k: EagerKernel, spec: HardwareSpec) -> dict[str, float]:
    """Seconds of each bound of kernel *k* on *spec* (``memory``, ``compute``, ``latency``, ``launch``)."""
    memory = k.bytes / (copy_bandwidth(spec) * max(k.mem_eff, 1e-6))
    compute = k.flops / (compute_rate(spec, k.rate) * max(k.compute_eff, 1e-6)) if k.flops else 0.0
    latency = 0.0
    if k.blocks and k.rounds and not spec.is_npu:    # CUDA launch shapes: NPU operator libraries differ
        slots = (spec.vector_cores or spec.cores) * resident_blocks(spec, k.threads)
        waves = math.ceil(k.blocks / slots)
        latency = waves * k.rounds * ROUND_TRIP_DRAM_LATENCIES * spec.dram_latency_ns * 1e-9
    epilogue = k.serial_bytes / copy_bandwidth(spec)
    return {"memory": memory, "compute": compute, "latency": latency, "epilogue": epilogue,
            "launch": spec.launch_overhead_us * 1e-6}


def kernel_seconds(k: EagerKernel, spec: HardwareSpec) -> float:
    """Device time of kernel *k* on *spec*: the largest bound plus the launch overhead."""
    t = kernel_terms(k, spec)
    return max(t["memory"], t["compute"], t["latency"]) + t["epilogue"] + t["launch"]
