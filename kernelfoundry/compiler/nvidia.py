"""NVIDIA post-processing in the trusted driver: PTX -> cubin (ptxas) -> resources, instruction mix.

``ptxas`` is run as Triton's own ``make_cubin`` runs it (``-lineinfo -v
--regAllocOptLevel=2 --gpu-name=sm_XX``); its ``-v`` report gives registers,
stack frame and spill bytes, ``cuobjdump --dump-resource-usage`` the cubin's
REG/STACK/SHARED/LOCAL.  The instruction mix is counted over the PTX (free);
the SASS (``nvdisasm``, ~0.3 s per cubin whatever its size) is disassembled only
when asked or when ptxas reports spills, to count the spill instructions.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .resources import CompiledResources
from .targets import CompileTarget, nvidia_tools
from .tools import ToolLimits, run_tool

_PTXAS_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")
_RES_USAGE = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")
_PTX_MEM = re.compile(r"\b(ld|st)\.global((?:\.[\w:]+)*)")
_PTX_CP_ASYNC = re.compile(r"\bcp\.async\.c[ag]\.shared\.global[^;]*?,\s*(0x[0-9a-fA-F]+|\d+)\s*[,;]")
_PTX_SFU = re.compile(r"\b(?:ex2|lg2|rsqrt|sin|cos|tanh)\.approx|\brcp\.(?:approx|rn)\.f32|\bsqrt\.(?:approx|rn)\.f32"
                      r"|\bdiv\.(?:full|approx|rn)\.f32")
_PTX_TYPE_BITS = re.compile(r"^[bsuf](8|16|32|64|128)$")
_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
_SASS_WIDTH = {"128": 128, "64": 64, "U8": 8, "S8": 8, "U16": 16, "S16": 16}


def _add(counter: dict[int, int], bits: int) -> None:
    counter[bits] = counter.get(bits, 0) + 1


def ptx_mix(ptx: str) -> dict[str, Any]:
    """Static instruction mix of a PTX module (see :class:`CompiledResources` for the fields)."""
    loads: dict[int, int] = {}
    stores: dict[int, int] = {}
    for op, mods in _PTX_MEM.findall(ptx):
        tokens = mods.split(".")[1:]
        vec = next((int(t[1:]) for t in tokens if re.fullmatch(r"v\d", t)), 1)
        bits = next((int(m.group(1)) for t in tokens if (m := _PTX_TYPE_BITS.match(t))), 32)
        _add(loads if op == "ld" else stores, vec * bits)
    async_sizes = [int(s, 0) for s in _PTX_CP_ASYNC.findall(ptx)]
    for size in async_sizes:
        _add(loads, size * 8)
    wgmma = len(re.findall(r"\bwgmma\.mma_async", ptx))
    mma = len(re.findall(r"\bmma\.sync\.aligned", ptx))
    instructions = sum(1 for line in ptx.splitlines()
                       if (s := line.strip()).endswith(";") and not s.startswith((".", "//")))
    return {"tensor_core": "wgmma" if wgmma else ("mma.sync" if mma else None), "mma_instructions": wgmma or mma,
            "global_load_bits": loads, "global_store_bits": stores, "async_copy_instructions": len(async_sizes),
            "tma_instructions": len(re.findall(r"\bcp\.async\.bulk", ptx)),
            "sfu_instructions": len(_PTX_SFU.findall(ptx)), "instructions": instructions, "mix_source": "ptx"}


def sass_mix(sass: str) -> dict[str, Any]:
    """Static instruction mix of SASS text (``nvdisasm -c``), spill instructions included."""
    ops = Counter()
    loads: dict[int, int] = {}
    stores: dict[int, int] = {}
    async_copies = 0
    for match in _SASS_LINE.finditer(sass):
        full = match.group(1)
        parts = full.split(".")
        ops[parts[0]] += 1
        if parts[0] in ("LDG", "STG", "LDGSTS"):
            bits = next((_SASS_WIDTH[p] for p in parts[1:] if p in _SASS_WIDTH), 32)
            _add(stores if parts[0] == "STG" else loads, bits)
            async_copies += parts[0] == "LDGSTS"
    wgmma, mma = ops["HGMMA"] + ops["IGMMA"] + ops["QGMMA"], ops["HMMA"] + ops["IMMA"] + ops["DMMA"]
    return {"tensor_core": "wgmma" if wgmma else ("mma.sync" if mma else None), "mma_instructions": wgmma or mma,
            "global_load_bits": loads, "global_store_bits": stores, "async_copy_instructions": async_copies,
            "tma_instructions": ops["UTMALDG"] + ops["UBLKCP"], "sfu_instructions": ops["MUFU"],
            "spill_instructions": ops["STL"] + ops["LDL"], "instructions": sum(ops.values()), "mix_source": "sass"}


def parse_ptxas_log(log: str) -> dict[str, int]:
    """``{"registers", "stack_bytes", "spill_store_bytes", "spill_load_bytes"}`` from ``ptxas -v``."""
    out: dict[str, int] = {}
    if m := _PTXAS_PROPS.search(log):
        out.update(stack_bytes=int(m.group(1)), spill_store_bytes=int(m.group(2)), spill_load_bytes=int(m.group(3)))
    if m := _PTXAS_REGS.search(log):
        out["registers"] = int(m.group(1))
    return out


def parse_resource_usage(text: str) -> dict[str, int]:
    """``{"registers", "stack_bytes", "static_shared_bytes", "local_bytes"}`` from cuobjdump -res-usage."""
    m = _RES_USAGE.search(text)
    if not m:
        return {}
    return {"registers": int(m.group(1)), "stack_bytes": int(m.group(2)), "static_shared_bytes": int(m.group(3)),
            "local_bytes": int(m.group(4))}


@dataclass
class NvidiaBuild:
    """The driver's half of an NVIDIA compile: cubin, SASS (maybe), resources, or an error."""

    ok: bool
    error: str = ""
    cubin: bytes = b""
    sass: str | None = None
    ptxas_log: str = ""
    resources: CompiledResources | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def _trim(text: str, limit: int = 1500) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit // 2] + "\n...\n" + text[-limit // 2:]


#: ``debug`` choices of :func:`ptxas_argv`, as Triton's ``make_cubin`` picks them from its knobs.
PTXAS_DEBUG = {"lineinfo": ["-lineinfo"], "none": ["-lineinfo", "-suppress-debug-info"], "full": ["-g"]}


def ptxas_argv(ptxas: str, gpu_name: str, *, fmad: bool = True, debug: str = "lineinfo",
               opt_level: int | None = None) -> list[str]:
    """The ptxas command line Triton's ``make_cubin`` builds (``-v``, ``--regAllocOptLevel=2``), reading
    ``{dir}/kernel.ptx`` and writing ``{dir}/kernel.cubin`` (placeholders for :func:`run_tool`).

    *debug*: a key of :data:`PTXAS_DEBUG`; *opt_level*: None (ptxas's default) or ``--opt-level N``.
    Used by the driver's own build and by the sandbox's ptxas broker (:mod:`.ptxas_broker`).
    """
    opt = [] if opt_level is None else ["--opt-level", str(int(opt_level))]
    return [ptxas, *PTXAS_DEBUG[debug], *([] if fmad else ["--fmad=false"]), "-v", *opt, "--regAllocOptLevel=2",
            f"--gpu-name={gpu_name}", "{dir}/kernel.ptx", "-o", "{dir}/kernel.cubin"]


def disassemble(cubin: bytes, target: CompileTarget, limits: ToolLimits | None = None) -> tuple[str | None, str]:
    """``(sass text, "")`` or ``(None, error)`` via the wheel's nvdisasm."""
    tools = nvidia_tools(int(target.arch))
    run = run_tool([tools.nvdisasm, "-c", "-ndf", "{dir}/kernel.cubin"], {"kernel.cubin": cubin}, limits=limits)
    if not run.ok:
        return None, _trim(f"nvdisasm {run.reason or f'failed with code {run.returncode}'}: {run.stderr}")
    return run.stdout, ""


def build(ptx: str, target: CompileTarget, metadata: dict[str, Any], *, sass: bool | str = "auto",
          limits: ToolLimits | None = None) -> NvidiaBuild:
    """Assemble *ptx* for *target* and read its resources; *sass*: True, False or "auto" (on spills)."""
    tools = nvidia_tools(int(target.arch))
    start = time.perf_counter()
    run = run_tool(ptxas_argv(tools.ptxas, target.sm_name, fmad=bool(metadata.get("enable_fp_fusion", True))),
                   {"kernel.ptx": ptx.encode()}, ("kernel.cubin",), limits=limits)
    seconds = {"ptxas": round(time.perf_counter() - start, 4)}
    log = run.stderr + run.stdout
    cubin = (run.outputs or {}).get("kernel.cubin", b"")
    if not run.ok or not cubin:
        why = run.reason or f"failed with code {run.returncode}"
        return NvidiaBuild(ok=False, error=_trim(f"ptxas {why}:\n{log}"), ptxas_log=log, seconds=seconds)
    t = time.perf_counter()
    usage = run_tool([tools.cuobjdump, "--dump-resource-usage", "{dir}/kernel.cubin"], {"kernel.cubin": cubin},
                     limits=limits)
    seconds["resource_usage"] = round(time.perf_counter() - t, 4)
    figures = {**parse_ptxas_log(log), **parse_resource_usage(usage.stdout)}
    if "registers" not in figures:
        return NvidiaBuild(ok=False, error=_trim(f"could not read the register count from ptxas -v:\n{log}"),
                           cubin=cubin, ptxas_log=log, seconds=seconds)
    mix = ptx_mix(ptx)
    sass_text = None
    spills = figures.get("spill_store_bytes", 0) or figures.get("spill_load_bytes", 0) or figures.get("local_bytes", 0)
    if sass is True or (sass == "auto" and spills):
        t = time.perf_counter()
        sass_text, _ = disassemble(cubin, target, limits)
        seconds["disassemble"] = round(time.perf_counter() - t, 4)
        if sass_text:
            mix = sass_mix(sass_text)
    warps = int(metadata.get("num_warps", 4))
    resources = CompiledResources(vendor="nvidia", num_warps=warps, threads_per_program=warps * target.warp_size,
                                  shared_bytes=int(metadata.get("shared") or 0), **figures, **mix)
    return NvidiaBuild(ok=True, cubin=cubin, sass=sass_text, ptxas_log=log, resources=resources, seconds=seconds)
