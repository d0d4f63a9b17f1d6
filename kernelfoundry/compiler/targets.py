"""Compile targets: hardware name -> Triton target, and the NVIDIA tools the driver runs.

A hardware file's optional ``triton_target`` ("cuda:90:32", "hip:gfx942:64")
names what Triton compiles for it.  Hardware without one, or whose backend the
installed Triton wheel lacks, has no backend: :func:`resolve_target` says so
instead of failing.  Everything here is trusted driver code (no candidate runs).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..perfmodel import TRITON_TARGET_RE, load_hardware

NO_BACKEND = "no Triton backend for this hardware in the installed wheel"
_BACKEND_PACKAGE = {"cuda": "nvidia", "hip": "amd"}


@dataclass(frozen=True)
class CompileTarget:
    """One Triton target: backend ("cuda" | "hip"), arch (90 | "gfx942"), warp size."""

    backend: str
    arch: int | str
    warp_size: int

    @property
    def text(self) -> str:
        return f"{self.backend}:{self.arch}:{self.warp_size}"

    @property
    def vendor(self) -> str:
        return _BACKEND_PACKAGE[self.backend]

    @property
    def sm_name(self) -> str:
        """ptxas's ``--gpu-name`` (sm_90a for Hopper: Triton targets the arch-specific features)."""
        if self.backend != "cuda":
            raise ValueError(f"{self.text} is not an NVIDIA target")
        return f"sm_{self.arch}{'a' if int(self.arch) >= 90 else ''}"

    def gpu_target(self):
        from triton.backends.compiler import GPUTarget
        return GPUTarget(self.backend, self.arch, self.warp_size)


def parse_target(text: str) -> CompileTarget:
    """``"cuda:90:32"`` -> CompileTarget; raises ValueError naming the expected form."""
    if not isinstance(text, str) or not TRITON_TARGET_RE.fullmatch(text):
        raise ValueError(f"Triton target {text!r} must look like 'cuda:90:32' or 'hip:gfx942:64'")
    backend, arch, warp = text.split(":")
    return CompileTarget(backend, int(arch) if backend == "cuda" else arch, int(warp))


@functools.lru_cache(maxsize=None)
def installed_backends() -> tuple[str, ...]:
    """Backends of the installed Triton wheel ("nvidia", "amd", ...)."""
    try:
        from triton.backends import backends
    except ImportError:
        return ()
    return tuple(sorted(backends))


def resolve_target(hardware: str) -> tuple[CompileTarget | None, str]:
    """``(target, "")`` for hardware Triton can compile for, else ``(None, why not)``.

    Raises ``HardwareError`` for an unknown hardware name (the caller's mistake).
    """
    spec = load_hardware(hardware)
    if not spec.triton_target:
        return None, f"{NO_BACKEND} ({spec.name} has no triton_target in its hardware file)"
    target = parse_target(spec.triton_target)
    if target.vendor not in installed_backends():
        return None, (f"{NO_BACKEND} ({spec.name} needs the '{target.vendor}' backend; installed: "
                      f"{', '.join(installed_backends()) or 'none'})")
    return target, ""


@dataclass(frozen=True)
class NvidiaTools:
    """Paths and versions of the wheel's ptxas / cuobjdump / nvdisasm for one arch."""

    ptxas: str
    ptxas_version: str
    ptx_version: int
    cuobjdump: str
    nvdisasm: str


@functools.lru_cache(maxsize=None)
def nvidia_tools(arch: int) -> NvidiaTools:
    """The tools Triton itself would use for *arch* (runs each once with ``--version``; trusted)."""
    from triton import knobs
    from triton.backends.nvidia.compiler import get_ptxas, ptx_get_version
    ptxas = get_ptxas(int(arch))
    return NvidiaTools(ptxas=ptxas.path, ptxas_version=ptxas.version, ptx_version=ptx_get_version(ptxas.version),
                       cuobjdump=knobs.nvidia.cuobjdump.path, nvdisasm=knobs.nvidia.nvdisasm.path)


def job_options(target: CompileTarget) -> dict:
    """Options the sandboxed job passes to Triton for *target* so that it needs no subprocess.

    NVIDIA: the PTX ISA version Triton derives from ``ptxas --version`` (the job
    cannot run ptxas: its seccomp filter forbids ``execve``).
    """
    if target.backend == "cuda":
        return {"ptx_version": nvidia_tools(int(target.arch)).ptx_version}
    return {}


def toolchain_id(target: CompileTarget) -> str:
    """What besides Triton's version decides the output for *target* (part of the cache key)."""
    if target.backend == "cuda":
        return "ptxas " + nvidia_tools(int(target.arch)).ptxas_version
    from triton.backends.amd.compiler import get_amd_codegen_revision
    return "amd-codegen " + re.sub(r"\s+", " ", str(get_amd_codegen_revision()))
