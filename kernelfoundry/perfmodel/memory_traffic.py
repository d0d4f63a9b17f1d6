"""Memory traffic per level, vectorized: L1 re-reads, L2 transactions, DRAM reads and writes.

DRAM reads follow each launch's wave-footprint curve F(w) (distinct bytes touched by
programs 0..w-1).  W programs run at once (cores x resident programs); programs of one
wave share data through L2 because they run at the same time.  Whether data survives
into later waves depends on L2 capacity C:

* Working-set (Denning) view: L2 holds the footprint of the last w* programs, F(w*) = C;
  each further wave of W programs brings F(w* + W) - F(w*) new bytes.
* Cyclic view: programs sweep their data (e.g. the K loop of a matmul) in step, so a
  wave whose footprint exceeds C evicts what the next wave needs: F(W) bytes per wave.

They are blended by phi = min(1, C / F(W))^2: squared because programs of a wave advance
in step, so a wave much larger than L2 evicts its predecessor before reuse (cyclic view).
Re-reads inside a program (``load sectors`` beyond its unique footprint) hit L1 when the
resident programs' footprints fit in L1, else L2, else DRAM.  See ``docs/perfmodel.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .features import GRID, GRID_W


def eval_curve(grid: np.ndarray, w: np.ndarray) -> np.ndarray:
    """F(w) for curves ``grid`` [N, GRID] at program counts ``w`` [H, N] (piecewise linear)."""
    w = np.maximum(w, 0.0)
    j = np.clip(np.floor(np.log2(np.maximum(w, 1.0))).astype(np.int64), 0, GRID - 2)
    lo = np.take_along_axis(np.broadcast_to(grid, (w.shape[0],) + grid.shape), j[..., None], axis=2)[..., 0]
    hi = np.take_along_axis(np.broadcast_to(grid, (w.shape[0],) + grid.shape), (j + 1)[..., None], axis=2)[..., 0]
    a = GRID_W[j]
    inside = lo + (hi - lo) * np.clip((w - a) / a, 0.0, 1.0)
    below = grid[None, :, 0] * w            # between 0 and 1 program
    return np.where(w < 1.0, below, np.where(w > GRID_W[-1], grid[None, :, -1], inside))


def invert_curve(grid: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Largest w with F(w) <= capacity; ``grid`` [N, GRID], ``capacity`` [H, 1] -> [H, N].

    Returns +inf where the whole curve fits.
    """
    fits = grid[None, :, :] <= capacity[:, :, None]
    k = fits.sum(axis=2)                                    # grid points that fit (curve is monotone)
    j = np.clip(k - 1, 0, GRID - 2)
    lo = np.take_along_axis(np.broadcast_to(grid, (capacity.shape[0],) + grid.shape), j[..., None], axis=2)[..., 0]
    hi = np.take_along_axis(np.broadcast_to(grid, (capacity.shape[0],) + grid.shape), (j + 1)[..., None], axis=2)[..., 0]
    step = np.where(hi > lo, (capacity - lo) / np.where(hi > lo, hi - lo, 1.0), 1.0)
    w = GRID_W[j] * (1.0 + np.clip(step, 0.0, 1.0))
    first = grid[None, :, 0]
    w = np.where(k == 0, capacity / np.where(first > 0, first, 1.0), w)
    return np.where(k >= GRID, np.inf, w)


@dataclass
class Traffic:
    """Bytes per launch (totals over all programs) and the per-program L2 bytes, each [H, N]."""

    l2_bytes: np.ndarray            # all L2 <-> core transactions
    l2_bytes_per_program: np.ndarray
    dram_read: np.ndarray
    dram_write: np.ndarray
    l1_hit_bytes: np.ndarray
    miss_ratio: np.ndarray          # DRAM reads / L2 loads (for the latency mix)
    reread_dram: np.ndarray         # part of dram_read from re-reads inside a program


def traffic(*, programs, concurrent, resident, load_sector_bytes, store_bytes, store_sector_bytes,
            unique_load_bytes, unique_store_bytes, footprint, footprint_total, l1_free, l2_capacity,
            written_floor_bytes=0.0) -> Traffic:
    """Traffic for points; program/feature arrays are [N] (or [H, N]), capacities [H, N] / [H, 1].

    *concurrent* is the number of programs running at once (W), *resident* per core.
    """
    P = programs
    W = np.minimum(concurrent, P)
    # Re-reads inside a program: L1 when the resident programs' footprints fit.
    reread = np.maximum(load_sector_bytes - unique_load_bytes, 0.0)
    l1_need = unique_load_bytes * resident
    hit_l1 = np.where(reread > 0, np.clip(l1_free / np.maximum(l1_need, 1.0), 0.0, 1.0), 0.0)
    l1_hits = reread * hit_l1
    l2_per_prog = load_sector_bytes - l1_hits + store_sector_bytes
    l2_loads = P * (load_sector_bytes - l1_hits)

    # Between programs: footprint curve against L2 capacity.
    F_W = eval_curve(footprint, W)
    w_star = invert_curve(footprint, l2_capacity)
    w_fin = np.minimum(w_star, P)
    F_star = eval_curve(footprint, w_fin)
    new_per_wave = eval_curve(footprint, w_fin + W) - F_star
    denning = F_star + np.maximum(P - w_fin, 0.0) / W * new_per_wave
    cyclic = P / W * F_W
    phi = np.clip(l2_capacity / np.maximum(F_W, 1.0), 0.0, 1.0) ** 4
    inter = np.maximum(phi * denning + (1.0 - phi) * cyclic, footprint_total)

    # Re-reads that miss L1: they reach DRAM when the wave's footprints overflow L2.  The wave's
    # stores pass through L2 too (write-back) and take their share of it.
    wave_fp = W * (unique_load_bytes + unique_store_bytes)
    miss_intra = np.clip(1.0 - l2_capacity / np.maximum(wave_fp, 1.0), 0.0, 1.0)
    reread_dram = P * (reread - l1_hits) * miss_intra
    dram_read = inter + reread_dram

    # Writes: partial sectors merge in L2 when the wave's written sectors fit.  Merged, what reaches
    # DRAM is every sector some program wrote: never less than the program's written sectors capped
    # at its share of the tensor (*written_floor_bytes*).  Holes a masked store leaves in its own
    # sectors (a sparse store into a zero-filled output) are written back with them.
    written = W * unique_store_bytes
    merge = np.clip(l2_capacity / np.maximum(written, 1.0), 0.0, 1.0)
    merged = np.maximum(store_bytes, written_floor_bytes)
    dram_write = P * (merge * merged + (1.0 - merge) * np.maximum(unique_store_bytes, store_bytes))

    miss_ratio = np.clip(dram_read / np.maximum(l2_loads, 1.0), 0.0, 1.0)
    return Traffic(l2_bytes=P * l2_per_prog, l2_bytes_per_program=l2_per_prog, dram_read=dram_read,
                   dram_write=dram_write, l1_hit_bytes=P * l1_hits, miss_ratio=miss_ratio,
                   reread_dram=reread_dram)
