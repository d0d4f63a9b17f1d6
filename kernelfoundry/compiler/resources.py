"""Compiled resources of one kernel: what the real compiler decided, as a plain record.

Filled from ``ptxas -v`` and ``cuobjdump --dump-resource-usage`` (NVIDIA), the
AMDGCN kernel descriptor and metadata (AMD), Triton's own metadata (shared
memory) and a static instruction count over the PTX, SASS or AMDGCN text.
Instruction counts are static (instructions in the code, not executed ones).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class CompiledResources:
    """Per-program resources of one compiled kernel (see docs/compiler.md for each source)."""

    vendor: str                          # "nvidia" | "amd"
    registers: int                       # per thread: 32-bit registers (NVIDIA), arch VGPRs (AMD)
    num_warps: int                       # warps (NVIDIA) / wavefronts (AMD) per program
    threads_per_program: int
    shared_bytes: int                    # shared memory / LDS per program (Triton's allocation)
    stack_bytes: int = 0                 # per-thread stack frame (NVIDIA) / scratch (AMD)
    local_bytes: int = 0                 # NVIDIA local memory per thread (cuobjdump LOCAL)
    spill_store_bytes: int = 0           # NVIDIA ptxas -v
    spill_load_bytes: int = 0
    spilled_registers: int = 0           # AMD: VGPRs + SGPRs spilled (compiler metadata)
    spill_instructions: int | None = None  # static local/scratch loads+stores; None: not disassembled
    accum_registers: int = 0             # AMD AGPRs per lane
    scalar_registers: int = 0            # AMD SGPRs per wave
    static_shared_bytes: int = 0         # NVIDIA cuobjdump SHARED (static + reserved)
    occupancy_waves: int | None = None   # AMD compiler's waves-per-SIMD estimate
    tensor_core: str | None = None       # "wgmma" | "mma.sync" | "mfma" | None
    mma_instructions: int = 0
    global_load_bits: dict[int, int] = field(default_factory=dict)   # bits per thread per instruction -> count
    global_store_bits: dict[int, int] = field(default_factory=dict)
    async_copy_instructions: int = 0     # cp.async / LDGSTS (global -> shared without registers)
    tma_instructions: int = 0            # cp.async.bulk (Hopper TMA)
    sfu_instructions: int = 0            # exp2/log2/rcp/rsqrt/sqrt/sin/cos/tanh (special-function unit)
    instructions: int = 0
    mix_source: str = ""                 # "ptx" | "sass" | "amdgcn": where the counts above come from

    @property
    def spilled(self) -> bool:
        return bool(self.spill_store_bytes or self.spill_load_bytes or self.spilled_registers)

    @property
    def widest_load_bits(self) -> int:
        return max(self.global_load_bits, default=0)

    @property
    def widest_store_bits(self) -> int:
        return max(self.global_store_bits, default=0)

    def summary(self) -> str:
        """One line for reports and prompts: ``255 registers, 240 B spilled, 16 B shared, mma.sync``."""
        parts = [f"{self.registers} registers"]
        if self.spilled:
            spilled = self.spill_store_bytes or self.stack_bytes
            parts.append(f"{spilled} B spilled" if spilled else f"{self.spilled_registers} registers spilled")
        parts.append(f"{self.shared_bytes} B shared memory")
        if self.tensor_core:
            parts.append(f"{self.tensor_core} ({self.mma_instructions})")
        if self.global_load_bits:
            parts.append(f"loads up to {self.widest_load_bits}-bit")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["global_load_bits"] = {str(k): v for k, v in sorted(self.global_load_bits.items())}
        d["global_store_bits"] = {str(k): v for k, v in sorted(self.global_store_bits.items())}
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CompiledResources":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for key in ("global_load_bits", "global_store_bits"):
            values[key] = {int(k): int(v) for k, v in (values.get(key) or {}).items()}
        return cls(**values)
