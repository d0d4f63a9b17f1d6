"""Plain-data records that cross process boundaries: traces, gate results, verdicts.

These are the contracts between the verifier (which produces traces inside the
sandbox), the performance model (which consumes them), the search loop and the
run store.  Every record round-trips through JSON (``to_dict``/``from_dict``).

Per-program quantities are means over the sampled programs of a launch, with
loop sampling undone (each loop runs a few sampled trips; counts inside it are
weighted by ``trips / sampled_trips``).  See ``docs/trace.md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


def _from_dict(cls, data: dict[str, Any]):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class TensorTraffic:
    """Global-memory traffic of one program against one tensor argument."""

    dtype: str                      # element dtype, e.g. "fp16", "fp32"
    elem_bytes: int
    tensor_bytes: int               # size of the whole tensor (its storage extent)
    load_bytes: float = 0.0         # unmasked elements loaded x element size
    store_bytes: float = 0.0
    load_sectors: float = 0.0       # sum over load instructions of distinct 32-byte sectors touched
    store_sectors: float = 0.0
    unique_load_bytes: float = 0.0  # this program's distinct footprint (32-byte sectors x 32)
    unique_store_bytes: float = 0.0
    role: str = ""                  # "input:i", "output:j" (what launch returned) or "scratch"
    max_unique_load_bytes: float = 0.0   # the largest distinct footprint of one sampled program
    # For the coverage checks only: the census's mean bytes loaded / written per program over the traced
    # programs' (>= 1; 1 where no census ran): sampled edge tiles understate what the grid moves
    coverage_load_factor: float = 1.0
    coverage_store_factor: float = 1.0

    to_dict = asdict
    from_dict = classmethod(_from_dict)


@dataclass
class LaunchTrace:
    """One kernel launch (of possibly several made by ``launch``) at one shape and config."""

    kernel: str                              # the @triton.jit function's name
    grid: tuple[int, int, int]
    num_programs: int
    sampled_programs: list[int]              # linear program ids actually executed
    traffic: dict[str, TensorTraffic]        # per tensor argument name, per program (mean)
    dot_flops: dict[str, float] = field(default_factory=dict)   # per program, by input dtype
    dot_shapes: list[tuple[int, int, int, str]] = field(default_factory=list)  # distinct (M, N, K, dtype)
    dot_operand_bytes: float = 0.0           # bytes of loaded dot operand tiles per inner-loop trip (a pipeline stage)
    elementwise_ops: float = 0.0             # per program: elements through arithmetic ops
    transcendental_ops: float = 0.0          # per program: elements through exp/log/sqrt/sin/...
    reduction_elems: float = 0.0             # per program: elements reduced (sum/max/...)
    loop_trips: float = 0.0                  # per program: total trips of all loops (weighted)
    max_loop_trips: float = 0.0              # the most loop trips of one sampled program (its serial chain)
    max_block_elems: int = 0                 # largest block tensor seen (register pressure proxy)
    program_bytes_spread: float = 1.0        # max / mean of per-program bytes over sampled programs
    census_programs: int = 0                 # programs the census ran (loops cut to their first trip)
    census_scale: float = 1.0                # per-program counts scaled up to the census's planned work
    # Wave footprint: for each tensor, [[w, distinct first-access sectors among programs 0..w-1], ...]
    footprint: dict[str, list[list[int]]] = field(default_factory=dict)
    # What the compile gate needs: argument kinds, dtypes, divisibility, constexprs, launch options
    signature: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["grid"] = list(self.grid)
        d["dot_shapes"] = [list(s) for s in self.dot_shapes]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LaunchTrace":
        data = dict(data)
        data["grid"] = tuple(data["grid"])
        data["dot_shapes"] = [tuple(s) for s in data.get("dot_shapes", [])]
        data["traffic"] = {k: TensorTraffic.from_dict(v) for k, v in data["traffic"].items()}
        return _from_dict(cls, data)

    @property
    def load_bytes(self) -> float:
        return sum(t.load_bytes for t in self.traffic.values())

    @property
    def store_bytes(self) -> float:
        return sum(t.store_bytes for t in self.traffic.values())


@dataclass
class ConfigTrace:
    """Everything ``launch`` did at one target shape with one kernel config."""

    shape_index: int                  # index into task.target_shapes
    shape: dict[str, int]
    config: dict[str, Any]            # kernel (non-hint) params the trace ran with
    launches: list[LaunchTrace]
    seconds: float = 0.0
    arms: list[str] = field(default_factory=list)   # branch arms the traced run took (harness/arms.py)
    # bytes of each zero-filled allocation the host code made (torch.zeros*): a fill kernel on a GPU
    zero_fill_bytes: list[float] = field(default_factory=list)
    # counted from the sparse loop samples only (no dense program run: docs/verifier.md, "Lazy dense
    # traces"): good enough to rank configs; a config the model picks is traced densely before it counts
    provisional: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"shape_index": self.shape_index, "shape": dict(self.shape), "config": dict(self.config),
                "launches": [l.to_dict() for l in self.launches], "seconds": self.seconds, "arms": list(self.arms),
                "zero_fill_bytes": list(self.zero_fill_bytes), "provisional": self.provisional}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ConfigTrace":
        return cls(shape_index=data["shape_index"], shape=dict(data["shape"]), config=dict(data["config"]),
                   launches=[LaunchTrace.from_dict(l) for l in data["launches"]],
                   seconds=data.get("seconds", 0.0), arms=[str(a) for a in data.get("arms", [])],
                   zero_fill_bytes=[float(b) for b in data.get("zero_fill_bytes", [])],
                   provisional=data.get("provisional") is True)


@dataclass
class GateResult:
    """One verifier gate's verdict; ``reason`` is written for the LLM and the user."""

    name: str            # "hack" | "load" | "correctness" | "trace" | "model"
    passed: bool
    reason: str = ""
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    to_dict = asdict
    from_dict = classmethod(_from_dict)


@dataclass
class HardwareScore:
    """The model's verdict on one hardware target."""

    latency_s: float                 # geometric mean over target shapes, each at its best config
    sol_fraction: float              # speed-of-light latency / predicted latency (geomean)
    baseline_s: float                # eager-PyTorch estimate (geomean)
    best_params: dict[str, Any]      # one config that is best across all target shapes
    per_shape: list[dict[str, Any]] = field(default_factory=list)
    # per_shape[i] = {"shape": {...}, "latency_s", "sol_s", "baseline_s", "best_params", "bound", "breakdown"}
    compiled: str = ""               # what the compiler said of best_params here (compile gate), or ""
    estimated_latency_s: float | None = None   # latency_s from the model's own register/smem estimates,
                                               # when the compiler's figures replaced them

    to_dict = asdict
    from_dict = classmethod(_from_dict)


@dataclass
class VerifyResult:
    """The verifier's verdict on one candidate source."""

    passed: bool
    gate: str | None                          # first failing gate, None when passed
    reason: str
    gates: list[GateResult] = field(default_factory=list)
    descriptors: dict[str, float] | None = None   # {"tiling": .., "memory_pattern": ..}
    objective: float | None = None
    hardware: dict[str, HardwareScore] = field(default_factory=dict)
    param_space: dict[str, list[Any]] | None = None
    traces: list[ConfigTrace] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self, *, with_traces: bool = False) -> dict[str, Any]:
        d = {"passed": self.passed, "gate": self.gate, "reason": self.reason,
             "gates": [g.to_dict() for g in self.gates], "descriptors": self.descriptors,
             "objective": self.objective,
             "hardware": {k: v.to_dict() for k, v in self.hardware.items()},
             "param_space": self.param_space, "seconds": self.seconds}
        if with_traces:
            d["traces"] = [t.to_dict() for t in self.traces]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "VerifyResult":
        return cls(passed=data["passed"], gate=data.get("gate"), reason=data.get("reason", ""),
                   gates=[GateResult.from_dict(g) for g in data.get("gates", [])],
                   descriptors=data.get("descriptors"), objective=data.get("objective"),
                   hardware={k: HardwareScore.from_dict(v) for k, v in data.get("hardware", {}).items()},
                   param_space=data.get("param_space"),
                   traces=[ConfigTrace.from_dict(t) for t in data.get("traces", [])],
                   seconds=data.get("seconds", 0.0))

    @property
    def inconclusive(self) -> bool:
        """The failing gate ran out of the verifier's own memory or time (see :func:`is_inconclusive`)."""
        return is_inconclusive(self.to_dict())

    @classmethod
    def failed(cls, gate: str, reason: str, *, gates: list[GateResult] | None = None,
               seconds: float = 0.0) -> "VerifyResult":
        gates = list(gates or [])
        if not gates or gates[-1].name != gate:
            gates.append(GateResult(name=gate, passed=False, reason=reason))
        return cls(passed=False, gate=gate, reason=reason, gates=gates, seconds=seconds)


#: The words a child's time-limit message ends with when the call used up its CPU time (harness.loader).
CPU_TIME_LIMIT = "s of CPU time"

#: The reason a verdict gives when the verifier's own limit, not the kernel, ended a gate.
INCONCLUSIVE = "inconclusive: the verifier reached its own limit, no fault was found in the kernel"


def is_inconclusive(verdict: dict[str, Any]) -> bool:
    """A failed verdict (``VerifyResult.to_dict()``) whose failing gate is marked inconclusive: the trace
    job ran out of the sandbox's memory or time at the target shapes.  The kernel is neither admitted
    nor counted as wrong: the search does not charge its operator, prompt or parent for it."""
    if verdict.get("passed"):
        return False
    failed = next((g for g in verdict.get("gates") or [] if isinstance(g, dict) and not g.get("passed")), None)
    return bool(failed and (failed.get("details") or {}).get("inconclusive"))
