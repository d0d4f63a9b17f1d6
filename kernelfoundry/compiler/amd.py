"""AMD resources from the AMDGCN text the compile job returns (no tool runs: it is all in the text).

The assembler's kernel summary (``; TotalNumVgprs: 290``, ``; ScratchSize: 0``,
``; Occupancy: 1``...) and the code-object metadata (``.vgpr_spill_count``,
``.sgpr_spill_count``) give registers, scratch and spills; the instruction mix is
counted over the kernel's instructions (MFMA, buffer/global load and store
widths, transcendental ops, scratch accesses).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from .resources import CompiledResources

_SUMMARY = re.compile(r"^;\s*(NumVgprs|NumAgprs|TotalNumVgprs|TotalNumSgprs|ScratchSize|Occupancy):\s*(\d+)", re.M)
_META = re.compile(r"^\s*\.(vgpr_spill_count|sgpr_spill_count|private_segment_fixed_size):\s*(\d+)", re.M)
_INSTR = re.compile(r"^\s+([a-z][a-z0-9_]*)\b", re.M)
_MEM = re.compile(r"^(global|buffer|flat)_(load|store)_(lds_)?(dwordx[234]|dword|ubyte|sbyte|ushort|sshort|short|byte"
                  r"|b128|b96|b64|b32|b16|b8)")
_BITS = {"dword": 32, "dwordx2": 64, "dwordx3": 96, "dwordx4": 128, "ubyte": 8, "sbyte": 8, "byte": 8,
         "ushort": 16, "sshort": 16, "short": 16, "b8": 8, "b16": 16, "b32": 32, "b64": 64, "b96": 96, "b128": 128}
_SFU = re.compile(r"^v_(exp|log|rcp|rcp_iflag|rsq|sqrt|sin|cos)_(f16|f32|f64)(_e32|_e64)?$")


def kernel_text(amdgcn: str) -> str:
    """The instructions of the kernel body (from its label to ``.Lfunc_end``), directives excluded."""
    start = amdgcn.find(":\n", amdgcn.find(".type"))
    end = amdgcn.find(".Lfunc_end", start)
    return amdgcn[start:end if end > 0 else len(amdgcn)]


def amdgcn_mix(amdgcn: str) -> dict[str, Any]:
    """Static instruction mix of one kernel's AMDGCN (see :class:`CompiledResources`)."""
    ops = Counter(_INSTR.findall(kernel_text(amdgcn)))
    loads: dict[int, int] = {}
    stores: dict[int, int] = {}
    async_copies = 0
    for op, n in ops.items():
        m = _MEM.match(op)
        if not m:
            continue
        target = loads if m.group(2) == "load" else stores
        target[_BITS[m.group(4)]] = target.get(_BITS[m.group(4)], 0) + n
        async_copies += n if m.group(3) else 0
    mfma = sum(n for op, n in ops.items() if op.startswith(("v_mfma", "v_smfmac")))
    return {"tensor_core": "mfma" if mfma else None, "mma_instructions": mfma, "global_load_bits": loads,
            "global_store_bits": stores, "async_copy_instructions": async_copies,
            "sfu_instructions": sum(n for op, n in ops.items() if _SFU.match(op)),
            "spill_instructions": sum(n for op, n in ops.items() if op.startswith("scratch_")),
            "instructions": sum(ops.values()), "mix_source": "amdgcn"}


def amd_resources(amdgcn: str, metadata: dict[str, Any], warp_size: int) -> CompiledResources:
    """Resources of one compiled AMD kernel; raises ValueError when the summary is missing."""
    summary = {k: int(v) for k, v in _SUMMARY.findall(amdgcn)}
    meta = {k: int(v) for k, v in _META.findall(amdgcn)}
    if "TotalNumVgprs" not in summary:
        raise ValueError("the AMDGCN output has no kernel summary (TotalNumVgprs)")
    warps = int(metadata.get("num_warps", 4))
    return CompiledResources(
        vendor="amd", registers=summary["TotalNumVgprs"], num_warps=warps, threads_per_program=warps * warp_size,
        shared_bytes=int(metadata.get("shared") or 0),
        stack_bytes=summary.get("ScratchSize", meta.get("private_segment_fixed_size", 0)),
        spilled_registers=meta.get("vgpr_spill_count", 0) + meta.get("sgpr_spill_count", 0),
        accum_registers=summary.get("NumAgprs", 0), scalar_registers=summary.get("TotalNumSgprs", 0),
        occupancy_waves=summary.get("Occupancy"), **amdgcn_mix(amdgcn))
