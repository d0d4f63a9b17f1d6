"""Target-shape trace inputs without a period: a load from a tiled input reads a hashed chunk of its tile.

Large trace inputs are one tile of values mapped again and again (``harness/tiled.py``), so at the
target shape row r and row r + period hold the same values, which no check's input does: a kernel that
fingerprints a few elements of two rows could tell the trace from a check and skip a pass there
(softmax 1.64x, layernorm 1.98x its honest twin, the red team's "periodic trace inputs").  Loads from a
tiled input are rewritten here: the bytes at offset ``o`` come from the tile's chunk
``mix(o // CHUNK) % chunks`` (a fixed 64-bit hash), so values keep the tile's distribution (the task's
value profile, integer ranges included), every read of an address agrees with every other, and rows no
longer repeat.  Memory itself stays one tile until a kernel writes into an input: before the write,
the chunks it touches get their hashed bytes written into memory (materialised), and loads from them
read memory from then on, so what a kernel writes reads back on top of the values it read.  Writing
therefore reveals nothing: an ``atomic_add(x, 0.0)`` on two rows one tile apart leaves them as unequal
as they were.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np

from ...harness.aperiodic_hash import CHUNK, UINT, chunk_source, region_salt, usable_tile


@dataclass
class _Region:
    start: int
    end: int
    tile: np.ndarray          # the tile's bytes (uint8)
    salt: np.uint64
    materialised: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # chunks in memory (sorted)

    def source(self, chunks: np.ndarray) -> np.ndarray:
        """The tile chunk each of *chunks* (chunk indices into the region) reads."""
        return chunk_source(chunks, self.salt, self.tile.size)

    def materialise(self, offsets: np.ndarray, elem_bytes: int) -> None:
        """Write the hashed bytes of every chunk an access at *offsets* touches into memory, once."""
        first, last = offsets // CHUNK, (offsets + elem_bytes - 1) // CHUNK
        new = np.setdiff1d(np.union1d(first, last), self.materialised)
        if not new.size:
            return
        memory = (ctypes.c_uint8 * (self.end - self.start)).from_address(self.start)
        view = np.frombuffer(memory, dtype=np.uint8)
        dst = (new[:, None] * CHUNK + np.arange(CHUNK)).reshape(-1)
        src = (self.source(new)[:, None] * CHUNK + np.arange(CHUNK)).reshape(-1)
        inside = dst < self.end - self.start                   # the tensor may end inside its last chunk
        view[dst[inside]] = self.tile[src[inside]]
        self.materialised = np.union1d(self.materialised, new)


@dataclass
class AperiodicInputs:
    """The tiled inputs of one trace; :meth:`rewrite` a load's result, :meth:`wrote` note a write."""

    regions: list[_Region] = field(default_factory=list)

    @classmethod
    def of(cls, tensors: list, tiles: list, seed: int) -> "AperiodicInputs":
        """*tensors*: the trace's inputs; *tiles*: each one's tile bytes, or None where it is not tiled."""
        regions = []
        for i, (tensor, tile) in enumerate(zip(tensors, tiles)):
            usable = usable_tile(tile)
            if usable is None:
                continue
            start = int(tensor.data_ptr())
            regions.append(_Region(start, start + tensor.numel() * tensor.element_size(), usable,
                                   region_salt(seed, i)))
        return cls(regions)

    def _lanes(self, ptrs: np.ndarray, mask: np.ndarray | None, elem_bytes: int):
        addrs = ptrs.reshape(-1)
        addrs = addrs.view(np.int64) if addrs.dtype == np.uint64 else addrs.astype(np.int64, copy=False)
        live = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), ptrs.shape).reshape(-1)
        for region in self.regions:
            inside = (addrs >= region.start) & (addrs <= region.end - elem_bytes)
            if live is not None:
                inside &= live
            if inside.all():
                yield region, None, addrs - region.start
                continue
            lanes = np.flatnonzero(inside)
            if lanes.size:
                yield region, lanes, addrs[lanes] - region.start

    def wrote(self, ptrs: np.ndarray, mask: np.ndarray | None, elem_bytes: int) -> None:
        """Before a store or atomic: the input chunks it touches get their hashed bytes in memory."""
        if self.regions:
            for region, _, offsets in self._lanes(ptrs, mask, elem_bytes):
                region.materialise(offsets, elem_bytes)

    def rewrite(self, ptrs: np.ndarray, mask: np.ndarray | None, data: np.ndarray, elem_bytes: int) -> None:
        """Replace, in place, the lanes of a load's *data* that read a tiled input with its hashed bytes."""
        if not self.regions or data.dtype.itemsize != elem_bytes or not data.flags.c_contiguous \
                or elem_bytes not in UINT:
            return
        out = data.reshape(-1).view(UINT[elem_bytes])
        for region, lanes, offsets in self._lanes(ptrs, mask, elem_bytes):
            if region.materialised.size:                  # written chunks read memory (what was written)
                keep = ~(np.isin(offsets // CHUNK, region.materialised)
                         | np.isin((offsets + elem_bytes - 1) // CHUNK, region.materialised))
                lanes = np.flatnonzero(keep) if lanes is None else lanes[keep]
                offsets = offsets[keep]
                if not offsets.size:
                    continue
            within = offsets & (CHUNK - 1)
            if np.any(within % elem_bytes):               # an element that straddles chunks: byte by byte
                byte = offsets[:, None] + np.arange(elem_bytes)
                values = region.tile[region.source(byte // CHUNK) * CHUNK + byte % CHUNK].reshape(-1).view(
                    UINT[elem_bytes])
            else:
                values = region.tile.view(UINT[elem_bytes])[(region.source(offsets // CHUNK) * CHUNK + within)
                                                             // elem_bytes]
            if lanes is None:
                out[:] = values
            else:
                out[lanes] = values
