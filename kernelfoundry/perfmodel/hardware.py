"""The hardware library: ``hardware/*.yaml`` -> validated :class:`HardwareSpec`.

Every figure in a hardware file carries a source comment (see ``docs/perfmodel.md``).
The loader checks each field's presence, type and range and names the file and field
in its errors; unknown names are reported with the list of known ones.
"""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from .. import data_dir
from ..errors import HardwareError

#: The shipped hardware library (package data; the repository's ``hardware/`` in a checkout).
HARDWARE_DIR = data_dir("hardware")
#: Environment variable naming the user's hardware directories (``os.pathsep``-separated), searched
#: before :data:`HARDWARE_DIR`: a file there adds a target or replaces the shipped one of that name.
HARDWARE_DIR_ENV = "KERNELFOUNDRY_HARDWARE_DIR"

#: Dtype keys of ``matrix_tflops`` / ``vector_tflops`` (the model's dtype classes).
DTYPE_KEYS = ("fp16", "bf16", "fp32", "fp8", "int8", "fp64")
KINDS = ("gpu", "npu")
LIBRARY_CLASSES = ("gemm", "elementwise", "reduction")
NPU_FIELDS = ("ub_bytes", "l1_bytes", "l0a_bytes", "l0b_bytes", "l0c_bytes", "ub_align_bytes")


@functools.lru_cache(maxsize=256)
def dtype_class(name: str) -> str:
    """Map a Triton / torch dtype name ("fp16", "float16", "fp8e4nv", "i8", ...) to a dtype key."""
    n = str(name).lower().replace("torch.", "").replace("tl.", "")
    aliases = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32",
               "tf32": "fp32", "float64": "fp64", "double": "fp64"}
    n = aliases.get(n, n)
    if n.startswith("fp8") or n.startswith("float8"):
        return "fp8"
    if n in ("i8", "u8", "int8", "uint8"):
        return "int8"
    return n if n in DTYPE_KEYS else "fp32"


# name -> (type, kinds that require it, lower bound, upper bound); bounds are inclusive.
_NUMBERS: dict[str, tuple[type, tuple[str, ...], float, float]] = {
    "cores": (int, KINDS, 1, 100000),
    "clock_ghz": (float, KINDS, 0.1, 10.0),
    "matrix_efficiency": (float, KINDS, 0.01, 1.0),
    "transcendental_per_clk": (float, KINDS, 0.01, 1e6),
    "dram_tbps": (float, KINDS, 0.001, 1000.0),
    "dram_efficiency": (float, KINDS, 0.01, 1.0),
    "dram_latency_ns": (float, KINDS, 1.0, 1e5),
    "l2_bytes": (int, KINDS, 1, 1 << 40),
    "l2_tbps": (float, KINDS, 0.001, 1000.0),
    "l2_latency_ns": (float, KINDS, 1.0, 1e5),
    "l2_usable_fraction": (float, KINDS, 0.01, 1.0),
    "l1_bytes": (int, KINDS, 0, 1 << 30),
    "core_l2_bytes_per_clk": (float, KINDS, 1.0, 1e6),
    "smem_bytes_per_clk": (float, KINDS, 1.0, 1e6),
    "max_programs_per_core": (int, KINDS, 1, 4096),
    "auto_buffers": (int, KINDS, 1, 8),
    "smem_stage_offset": (int, ("gpu",), 0, 8),
    "launch_overhead_us": (float, KINDS, 0.0, 1e5),
    "eager_op_overhead_us": (float, KINDS, 0.0, 1e5),
    "warp_size": (int, ("gpu",), 1, 1024),
    "schedulers_per_core": (int, ("gpu",), 1, 1024),
    "smem_bytes_per_core": (int, ("gpu",), 1, 1 << 30),
    "smem_bytes_per_program": (int, ("gpu",), 1, 1 << 30),
    "registers_per_core": (int, ("gpu",), 1, 1 << 30),
    "max_registers_per_thread": (int, ("gpu",), 1, 1 << 20),
    "max_threads_per_core": (int, ("gpu",), 1, 1 << 20),
    "max_threads_per_program": (int, ("gpu",), 1, 1 << 20),
    "vector_cores": (int, ("npu",), 1, 100000),
}
_STRINGS = ("name", "description", "kind", "vendor")
_OTHER = ("matrix_tflops", "vector_tflops", "matrix_granule", "library_efficiency", "npu", "calibration",
          "triton_target")
#: ``triton_target``: the Triton compile target, "cuda:<capability>:<warp size>" or "hip:<arch>:<warp size>".
TRITON_TARGET_RE = re.compile(r"(cuda:[0-9]+|hip:gfx[0-9a-z]+):(32|64)")


@dataclass(frozen=True)
class HardwareSpec:
    """One target's figures.  Rates in TFLOPS / TB/s, sizes in bytes, times in the unit named."""

    name: str
    description: str
    kind: str                           # "gpu" | "npu"
    vendor: str
    cores: int                          # SMs / CUs / Xe-cores / AI (cube) cores
    clock_ghz: float
    matrix_tflops: dict[str, float]     # dense matrix-unit peak per dot input dtype
    matrix_granule: tuple[int, int, int]
    matrix_efficiency: float
    vector_tflops: dict[str, float]     # non-matrix peak (FMA = 2 flops); must hold fp32
    transcendental_per_clk: float       # per core
    dram_tbps: float
    dram_efficiency: float
    dram_latency_ns: float
    l2_bytes: int
    l2_tbps: float
    l2_latency_ns: float
    l2_usable_fraction: float
    l1_bytes: int
    core_l2_bytes_per_clk: float
    smem_bytes_per_clk: float
    max_programs_per_core: int
    auto_buffers: int
    launch_overhead_us: float
    eager_op_overhead_us: float
    library_efficiency: dict[str, float]
    warp_size: int = 1
    schedulers_per_core: int = 1
    smem_bytes_per_core: int = 0        # GPU shared memory / LDS / SLM (NPU: see npu)
    smem_bytes_per_program: int = 0
    registers_per_core: int = 0         # 0: not modelled (NPU)
    max_registers_per_thread: int = 0
    max_threads_per_core: int = 0
    max_threads_per_program: int = 0
    vector_cores: int = 0               # NPU vector (AIV) cores; GPUs: same as cores
    smem_stage_offset: int = 0          # pipeline stages prefetched into registers, not shared memory
    npu: dict[str, int] = field(default_factory=dict)
    calibration: dict[str, Any] = field(default_factory=dict)
    triton_target: str = ""             # e.g. "cuda:90:32"; "" when no Triton backend compiles for it
    path: str = ""

    @property
    def is_npu(self) -> bool:
        return self.kind == "npu"

    def matrix_peak(self, dtype: str) -> float:
        """Matrix-unit peak in FLOP/s for a dot on *dtype*, 0 when the unit lacks it."""
        return self.matrix_tflops.get(dtype_class(dtype), 0.0) * 1e12

    def vector_peak(self, dtype: str = "fp32") -> float:
        """Vector-unit peak in FLOP/s for *dtype* (falls back to the fp32 rate)."""
        return self.vector_tflops.get(dtype_class(dtype), self.vector_tflops["fp32"]) * 1e12

    @property
    def dram_bw(self) -> float:
        """Peak DRAM bandwidth in bytes/s."""
        return self.dram_tbps * 1e12

    def summary(self) -> str:
        """One line for prompts and listings."""
        fp16 = self.matrix_tflops.get("fp16") or self.matrix_tflops.get("bf16") or 0.0
        if self.is_npu:
            chip = (f"UB {self.npu['ub_bytes'] // 1024} KiB, L1 {self.npu['l1_bytes'] // 1024} KiB, "
                    f"L0A/B {self.npu['l0a_bytes'] // 1024} KiB, L0C {self.npu['l0c_bytes'] // 1024} KiB")
            units = f"{self.cores} cube + {self.vector_cores} vector cores"
        else:
            chip = f"{self.smem_bytes_per_program // 1024} KB shared memory per program"
            units = f"{self.cores} cores, warp {self.warp_size}"
        return (f"{self.description}: {units}, fp16 matrix {fp16:g} TFLOPS, fp32 vector "
                f"{self.vector_tflops['fp32']:g} TFLOPS, DRAM {self.dram_tbps:g} TB/s, "
                f"L2 {self.l2_bytes / 2**20:.0f} MiB, {chip}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["matrix_granule"] = list(self.matrix_granule)
        d.pop("path")
        return d


def get_figure(spec: HardwareSpec, name: str) -> float:
    """One fitted figure of *spec* by name (``library_efficiency.gemm`` names a key of that dict)."""
    if name.startswith("library_efficiency."):
        return float(spec.library_efficiency[name.split(".", 1)[1]])
    return float(getattr(spec, name))


def with_figures(spec: HardwareSpec, values: dict[str, float]) -> HardwareSpec:
    """*spec* with some figures replaced (a new spec; the loader's cache is untouched)."""
    lib = dict(spec.library_efficiency)
    plain = {}
    for name, value in values.items():
        if name.startswith("library_efficiency."):
            lib[name.split(".", 1)[1]] = float(value)
        else:
            plain[name] = float(value)
    return replace(spec, library_efficiency=lib, **plain)


def user_hardware_dirs() -> list[Path]:
    """The directories of ``$KERNELFOUNDRY_HARDWARE_DIR``, in order; raises :class:`HardwareError`
    naming one that is not a directory.  Read at each call: a command's ``--hardware-dir`` sets it."""
    dirs = [Path(d).expanduser() for d in os.environ.get(HARDWARE_DIR_ENV, "").split(os.pathsep) if d.strip()]
    for d in dirs:
        if not d.is_dir():
            raise HardwareError(f"hardware directory {d} (from ${HARDWARE_DIR_ENV}) is not a directory.")
    return dirs


def hardware_dirs() -> list[Path]:
    """Where ``load_hardware(name)`` looks, in order: the user's directories, then :data:`HARDWARE_DIR`."""
    return [*user_hardware_dirs(), HARDWARE_DIR]


def writable_hardware_dir() -> Path:
    """Where a new hardware file goes by default: the first user directory, else the library."""
    return (user_hardware_dirs() or [HARDWARE_DIR])[0]


def list_hardware() -> list[str]:
    """Names of the hardware files in the library and the user's directories, sorted."""
    return sorted({p.stem for d in hardware_dirs() if d.is_dir() for p in d.glob("*.yaml")})


_CACHE: dict[tuple[str, float], HardwareSpec] = {}


def load_hardware(name_or_path: str | Path) -> HardwareSpec:
    """Load a library entry by name (``"h100"``) or a hardware file by path."""
    text = str(name_or_path)
    path = Path(text)
    if not (text.endswith((".yaml", ".yml")) or path.is_file()):
        dirs = hardware_dirs()
        path = next((d / f"{text}.yaml" for d in dirs if (d / f"{text}.yaml").is_file()), dirs[0] / f"{text}.yaml")
        if not path.is_file():
            known = ", ".join(list_hardware()) or "(none)"
            missing = "" if HARDWARE_DIR.is_dir() else f"; the hardware library {HARDWARE_DIR} is missing"
            raise HardwareError(f"unknown hardware '{text}': no {text}.yaml in {', '.join(map(str, dirs))}"
                                f"{missing}; known hardware: {known}; give the path of a hardware .yaml file, "
                                f"or a directory of them with --hardware-dir / ${HARDWARE_DIR_ENV}.")
    if not path.is_file():
        raise HardwareError(f"hardware file {path} does not exist.")
    key = (str(path.resolve()), path.stat().st_mtime)
    if key not in _CACHE:
        _CACHE[key] = _parse(path)
    return _CACHE[key]


def resolve_hardware(names: list[str] | tuple[str, ...]) -> list[HardwareSpec]:
    """Specs for *names*, in order; raises :class:`HardwareError` naming an unknown one."""
    if isinstance(names, str):
        names = [names]
    if not names:
        raise HardwareError(f"no hardware given; known hardware: {', '.join(list_hardware())}.")
    return [load_hardware(n) for n in names]


def _parse(path: Path) -> HardwareSpec:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise HardwareError(f"hardware file {path} is not valid YAML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HardwareError(f"hardware file {path} cannot be read: {exc}") from None
    return spec_from_dict(data, source=path)


def spec_from_dict(data: Any, *, source: Path | str | None = None) -> HardwareSpec:
    """Validate plain data (as parsed from YAML) into a :class:`HardwareSpec`."""
    where = f"hardware file {source}" if source else "hardware spec"

    def fail(name: str, msg: str) -> HardwareError:
        return HardwareError(f"{where}: field '{name}' {msg}")

    if not isinstance(data, dict):
        raise HardwareError(f"{where} must be a YAML mapping of field -> value; got {type(data).__name__}.")
    known = set(_STRINGS) | set(_NUMBERS) | set(_OTHER)
    unknown = sorted(set(data) - known)
    if unknown:
        raise HardwareError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; "
                            f"known fields are {', '.join(sorted(known))}.")
    for name in _STRINGS:
        if not isinstance(data.get(name), str) or not data[name].strip():
            raise fail(name, "is missing or not a non-empty string.")
    kind = data["kind"]
    if kind not in KINDS:
        raise fail("kind", f"must be one of {', '.join(KINDS)}; got {kind!r}.")

    values: dict[str, Any] = {name: data[name] for name in _STRINGS}
    for name, (typ, kinds, lo, hi) in _NUMBERS.items():
        if name not in data:
            if kind in kinds:
                raise fail(name, f"is missing (required for kind {kind}).")
            continue
        values[name] = _number(data[name], typ, lo, hi, lambda msg, n=name: fail(n, msg))

    values["matrix_tflops"] = _rates(data.get("matrix_tflops"), "matrix_tflops", fail, need=())
    values["vector_tflops"] = _rates(data.get("vector_tflops"), "vector_tflops", fail, need=("fp32",))
    granule = data.get("matrix_granule")
    if (not isinstance(granule, list) or len(granule) != 3
            or not all(isinstance(g, int) and not isinstance(g, bool) and g > 0 for g in granule)):
        raise fail("matrix_granule", f"must be [M, N, K] positive ints; got {granule!r}.")
    values["matrix_granule"] = tuple(granule)

    lib = data.get("library_efficiency")
    if not isinstance(lib, dict) or set(lib) != set(LIBRARY_CLASSES):
        raise fail("library_efficiency", f"must map exactly {', '.join(LIBRARY_CLASSES)} to a share of peak.")
    values["library_efficiency"] = {k: _number(v, float, 0.01, 1.0, lambda msg, k=k: fail(f"library_efficiency.{k}", msg))
                                    for k, v in lib.items()}

    if kind == "npu":
        npu = data.get("npu")
        if not isinstance(npu, dict) or set(npu) != set(NPU_FIELDS):
            raise fail("npu", f"must map exactly {', '.join(NPU_FIELDS)} to byte counts (required for kind npu).")
        values["npu"] = {k: _number(v, int, 1, 1 << 34, lambda msg, k=k: fail(f"npu.{k}", msg)) for k, v in npu.items()}
    elif "npu" in data:
        raise fail("npu", "is only allowed for kind npu.")
    else:
        values.setdefault("vector_cores", values["cores"])
        if values["smem_bytes_per_program"] > values["smem_bytes_per_core"]:
            raise fail("smem_bytes_per_program", "exceeds smem_bytes_per_core.")
        if values["max_threads_per_program"] > values["max_threads_per_core"]:
            raise fail("max_threads_per_program", "exceeds max_threads_per_core.")
    calibration = data.get("calibration", {})
    if not isinstance(calibration, dict):
        raise fail("calibration", "must be a mapping (date, device, factors, ...).")
    values["calibration"] = calibration
    target = data.get("triton_target", "")
    if not isinstance(target, str) or (target and not TRITON_TARGET_RE.fullmatch(target)):
        raise fail("triton_target", f"must look like 'cuda:90:32' or 'hip:gfx942:64'; got {target!r}.")
    values["triton_target"] = target
    values["path"] = str(source or "")
    return HardwareSpec(**values)


def _number(value: Any, typ: type, lo: float, hi: float, fail) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(f"must be a number; got {value!r}.")
    if typ is int and (not isinstance(value, int)):
        raise fail(f"must be an integer; got {value!r}.")
    if not math.isfinite(value) or not lo <= value <= hi:
        raise fail(f"must lie in [{lo:g}, {hi:g}]; got {value!r}.")
    return typ(value)


def _rates(raw: Any, name: str, fail, *, need: tuple[str, ...]) -> dict[str, float]:
    if not isinstance(raw, dict):
        raise fail(name, f"must map dtype ({', '.join(DTYPE_KEYS)}) to TFLOPS.")
    out = {}
    for k, v in raw.items():
        if k not in DTYPE_KEYS:
            raise fail(f"{name}.{k}", f"is not a known dtype; use one of {', '.join(DTYPE_KEYS)}.")
        out[k] = _number(v, float, 0.0, 1e6, lambda msg, k=k: fail(f"{name}.{k}", msg))
    for k in need:
        if k not in out:
            raise fail(name, f"must give the {k} rate.")
    return out
