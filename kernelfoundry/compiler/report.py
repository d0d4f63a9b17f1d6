"""The compile report: per hardware and config, whether and how each kernel compiled.

``CompileReport.hardware[name].configs[config_key].kernels[i]`` is one launch's
:class:`KernelCompile`.  A config compiles on a hardware when every kernel it
launches compiles and fits the hardware (shared memory, threads per program);
a hardware's ``status`` is ``ok`` (every config), ``partial``, ``error`` (none)
or ``no_backend`` (Triton cannot compile for it here; the model keeps its
estimates).  Everything round-trips through ``to_dict``/``from_dict`` (JSON).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .resources import CompiledResources

STATUSES = ("ok", "partial", "error", "no_backend")


@dataclass
class KernelCompile:
    """One kernel launch compiled for one target."""

    kernel: str
    signature: dict[str, Any]                # the launch-signature record
    key: str                                 # compile-cache key
    ok: bool
    error: str = ""                          # the compiler's message (trimmed) or why it does not fit
    cached: bool = False                     # came from the cache (not compiled in this call)
    resources: CompiledResources | None = None
    artifacts: dict[str, str] = field(default_factory=dict)    # "ptx" | "cubin" | "sass" | "amdgcn" | "hsaco" -> path
    seconds: dict[str, float] = field(default_factory=dict)    # per stage, when it was compiled

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["resources"] = self.resources.to_dict() if self.resources else None
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "KernelCompile":
        values = dict(data)
        values["resources"] = CompiledResources.from_dict(data["resources"]) if data.get("resources") else None
        return cls(**values)


@dataclass
class ConfigCompile:
    """All kernels one config launches, on one hardware."""

    ok: bool
    error: str = ""                          # the first failing kernel's reason
    kernels: list[KernelCompile] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "error": self.error, "kernels": [k.to_dict() for k in self.kernels]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ConfigCompile":
        return cls(ok=data["ok"], error=data.get("error", ""),
                   kernels=[KernelCompile.from_dict(k) for k in data.get("kernels", [])])


@dataclass
class HardwareCompile:
    """One hardware of the run: its Triton target and every config's outcome."""

    hardware: str
    target: str | None                       # "cuda:90:32"; None without a backend
    status: str                              # one of STATUSES
    reason: str = ""                         # no_backend / error: why
    configs: dict[str, ConfigCompile] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "target": self.target, "status": self.status, "reason": self.reason,
                "configs": {k: c.to_dict() for k, c in self.configs.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HardwareCompile":
        return cls(hardware=data["hardware"], target=data.get("target"), status=data["status"],
                   reason=data.get("reason", ""),
                   configs={k: ConfigCompile.from_dict(c) for k, c in data.get("configs", {}).items()})


@dataclass
class CompileReport:
    """The compile gate's answer for one candidate."""

    source_hash: str
    triton_version: str
    hardware: dict[str, HardwareCompile]
    seconds: float = 0.0                     # wall time of compile_candidate
    stage_seconds: dict[str, float] = field(default_factory=dict)   # summed over compiles done in this call
    cache_hits: int = 0                      # distinct compiles found in the cache
    cache_misses: int = 0                    # distinct compiles run in this call
    job: dict[str, Any] = field(default_factory=dict)   # sandboxed job(s): wall_s, mode, reason, attempts

    @property
    def compiled_anywhere(self) -> bool:
        """Some config compiled on some hardware with a backend (vacuously true without backends)."""
        with_backend = [h for h in self.hardware.values() if h.status != "no_backend"]
        return not with_backend or any(h.status in ("ok", "partial") for h in with_backend)

    @property
    def failure_reason(self) -> str:
        """When nothing compiled: the first hardware's reason (for the compile gate); else ""."""
        if self.compiled_anywhere:
            return ""
        first = next(h for h in self.hardware.values() if h.status != "no_backend")
        return f"{first.hardware} ({first.target}): {first.reason}"

    def config(self, hardware: str, config_key: str) -> ConfigCompile | None:
        hw = self.hardware.get(hardware)
        return hw.configs.get(config_key) if hw else None

    def cache_hit_rate(self) -> float | None:
        total = self.cache_hits + self.cache_misses
        return self.cache_hits / total if total else None

    def summary(self) -> dict[str, str]:
        """One line per hardware for prompts and ``verify``: status and the first config's resources."""
        out = {}
        for name, hw in self.hardware.items():
            if hw.status == "no_backend" or not hw.configs:
                out[name] = hw.reason or hw.status
                continue
            key, cfg = next(iter(hw.configs.items()))
            if not cfg.ok:
                out[name] = f"{hw.status}: {cfg.error.splitlines()[0] if cfg.error else 'failed'}"
                continue
            facts = "; ".join(f"{k.kernel}: {k.resources.summary()}" for k in cfg.kernels if k.resources)
            out[name] = f"{hw.status} ({hw.target}); {key or 'default'}: {facts}"
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"source_hash": self.source_hash, "triton_version": self.triton_version,
                "hardware": {k: h.to_dict() for k, h in self.hardware.items()}, "seconds": self.seconds,
                "stage_seconds": dict(self.stage_seconds), "cache_hits": self.cache_hits,
                "cache_misses": self.cache_misses, "job": dict(self.job),
                "compiled_anywhere": self.compiled_anywhere, "failure_reason": self.failure_reason}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CompileReport":
        return cls(source_hash=data["source_hash"], triton_version=data["triton_version"],
                   hardware={k: HardwareCompile.from_dict(h) for k, h in data["hardware"].items()},
                   seconds=data.get("seconds", 0.0), stage_seconds=dict(data.get("stage_seconds", {})),
                   cache_hits=data.get("cache_hits", 0), cache_misses=data.get("cache_misses", 0),
                   job=dict(data.get("job", {})))
