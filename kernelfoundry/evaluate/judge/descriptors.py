"""The archive's behaviour descriptors, computed from a measured trace (never from source text).

``tiling``: log2 of the output elements one program of the main launch writes.
``memory_pattern``: a category (value = category + 0.5), first rule that applies:

0. uncoalesced: under half of the bytes in the touched 32-byte sectors are used;
4. / 5. dot kernels (the main launch runs ``tl.dot``): tiled operand reuse across
   programs, in row-major order (4) or in a grouped, L2-aware order (5: the
   first 64 programs touch about as few operand panels as a square block would);
1. / 2. / 3. other kernels by how often a program re-reads its own data from
   global memory (load sectors / distinct sectors): once (1), twice (2), three
   or more times (3).

The main launch is the one that stores the most bytes over its grid.  Bins and
ranges are fixed (the archive's cells must not move); ``docs/descriptors.md``
explains each bin.
"""

from __future__ import annotations

import math
from typing import Any

from ...records import ConfigTrace, LaunchTrace

DESCRIPTOR_NAMES = ("tiling", "memory_pattern")
DESCRIPTOR_RANGES = ((0.0, 24.0), (0.0, 6.0))
DESCRIPTOR_BINS = (12, 6)

UNCOALESCED, ONE_PASS, TWO_PASS, MULTI_PASS, TILED_ROW_MAJOR, TILED_GROUPED = range(6)
MEMORY_PATTERNS = ("uncoalesced", "streaming, 1 pass", "2-pass re-read", "3+-pass re-read",
                   "tiled dot, row-major", "tiled dot, grouped")

COALESCED_MIN_EFFICIENCY = 0.5   # used bytes / (sectors x 32) below this: uncoalesced
TWO_PASS_MIN_REREAD = 1.5        # load sectors / distinct sectors per program
MULTI_PASS_MIN_REREAD = 2.5
GROUPED_MAX_RATIO = 1.5          # operand panels at the wave width / the square optimum 2*sqrt(w)
GROUP_WAVE = 64                  # programs considered for the program-order test
MIN_GROUP_WAVE = 16              # below this the grid is too small to tell orders apart


def _size_label(n: int) -> str:
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n // scale}{unit}"
    return str(n)


BIN_LABELS: dict[str, list[str]] = {
    "tiling": [f"{_size_label(4 ** i)}-{_size_label(4 ** (i + 1))} out/prog" for i in range(DESCRIPTOR_BINS[0])],
    "memory_pattern": list(MEMORY_PATTERNS),
}


def main_launch(trace: ConfigTrace) -> LaunchTrace:
    """The launch that stores the most bytes over its grid (ties: the most loaded bytes)."""
    if not trace.launches:
        raise ValueError("the trace has no kernel launches")
    return max(trace.launches, key=lambda l: (l.num_programs * l.store_bytes, l.num_programs * l.load_bytes))


def output_elems_per_program(launch: LaunchTrace) -> float:
    return sum(t.store_bytes / t.elem_bytes for t in launch.traffic.values())


def sector_efficiency(launch: LaunchTrace) -> float:
    """Bytes used / bytes moved in whole 32-byte sectors (1.0 = perfectly coalesced)."""
    sectors = sum(t.load_sectors + t.store_sectors for t in launch.traffic.values())
    used = sum(t.load_bytes + t.store_bytes for t in launch.traffic.values())
    return used / (32.0 * sectors) if sectors else 1.0


def reread_factor(launch: LaunchTrace) -> float:
    """How many times a program loads each of its distinct sectors (1.0 = a single pass)."""
    sectors = sum(t.load_sectors for t in launch.traffic.values())
    unique = sum(t.unique_load_bytes for t in launch.traffic.values()) / 32.0
    return sectors / unique if unique else 1.0


def order_ratio(launch: LaunchTrace) -> float | None:
    """Operand panels the first programs touch / the square optimum; ``None`` if not measurable.

    Takes the two inputs with the most distinct first-access sectors at the wave
    width w (<= 64): w programs need F_a * F_b >= w tile pairs, so F_a + F_b >= 2*sqrt(w).
    """
    tables = [dict((w, n) for w, n in pairs) for pairs in launch.footprint.values()]
    widths = [w for w in (tables[0] if tables else {}) if w <= GROUP_WAVE and all(w in t for t in tables)]
    if len(tables) < 2 or not widths or max(widths) < MIN_GROUP_WAVE:
        return None
    w = max(widths)
    panels = sorted((t[w] for t in tables), reverse=True)[:2]
    return sum(panels) / (2.0 * math.sqrt(w))


def memory_pattern(launch: LaunchTrace) -> int:
    """The memory-pattern category (0..5) of one launch; see the module docstring."""
    if sector_efficiency(launch) < COALESCED_MIN_EFFICIENCY:
        return UNCOALESCED
    if sum(launch.dot_flops.values()) > 0:
        ratio = order_ratio(launch)
        return TILED_GROUPED if ratio is not None and ratio <= GROUPED_MAX_RATIO else TILED_ROW_MAJOR
    reread = reread_factor(launch)
    if reread >= MULTI_PASS_MIN_REREAD:
        return MULTI_PASS
    return TWO_PASS if reread >= TWO_PASS_MIN_REREAD else ONE_PASS


def compute_descriptors(trace: ConfigTrace, params: dict[str, Any]) -> dict[str, float]:
    """``{"tiling": ..., "memory_pattern": ...}`` for the chosen config's trace at the first target shape.

    *params* is the full chosen config (kernel params and hints).  The rules read only
    the trace: hints such as ``num_stages`` are tuned by the performance model for every
    candidate, so they do not make a kernel structurally different.
    """
    launch = main_launch(trace)
    lo, hi = DESCRIPTOR_RANGES[0]
    tiling = min(max(math.log2(max(1.0, output_elems_per_program(launch))), lo), hi)
    return {"tiling": tiling, "memory_pattern": memory_pattern(launch) + 0.5}
