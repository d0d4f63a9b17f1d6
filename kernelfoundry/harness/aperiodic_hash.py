"""The hash that gives target-shape trace inputs no period (shared by the trace child and the judge).

A large trace input is one tile mapped again and again (``tiled.py``); the trace child's loads read
the bytes at offset ``o`` from the tile's chunk ``mix(o // CHUNK ^ salt) % chunks``
(``evaluate/child/aperiodic.py``), and the judge draws the same values to compute a reference for
what a traced program stored (``evaluate/judge/trace_values.py``).  Pure numpy: nothing here runs a
candidate.
"""

from __future__ import annotations

import numpy as np

#: Bytes per hashed chunk: values of one chunk stay together (any load width up to 64 bytes).
CHUNK = 64
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_M1, _M2, _GOLD = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over uint64 arrays (wrapping arithmetic)."""
    z = x.astype(np.uint64) + _GOLD
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def region_salt(seed: int, index: int) -> np.uint64:
    """The hash salt of trace input *index* under verify seed *seed*."""
    return np.uint64((int(seed) * 1_000_003 + int(index)) % (1 << 63))


def usable_tile(tile: np.ndarray) -> np.ndarray | None:
    """The whole chunks of a tile's bytes, or None when the tile is too small to hash (read as is)."""
    if tile is None or tile.size < CHUNK:
        return None
    return np.ascontiguousarray(tile[: tile.size - tile.size % CHUNK])


def chunk_source(chunks: np.ndarray, salt: np.uint64, tile_bytes: int) -> np.ndarray:
    """The tile chunk each of *chunks* (chunk indices into an input) reads."""
    return (mix(chunks.astype(np.uint64) ^ salt) % np.uint64(tile_bytes // CHUNK)).astype(np.int64)


def hashed_values(tile: np.ndarray, salt: np.uint64, offsets: np.ndarray, elem_bytes: int) -> np.ndarray:
    """The value (unsigned, *elem_bytes* wide) a load at each byte offset in *offsets* reads, offsets
    aligned to *elem_bytes*: what the trace's loads see, for the judge to draw the same values
    (``evaluate/judge/trace_values.py``)."""
    offsets = offsets.astype(np.int64)
    within = offsets & (CHUNK - 1)
    return tile.view(UINT[elem_bytes])[(chunk_source(offsets // CHUNK, salt, tile.size) * CHUNK + within)
                                        // elem_bytes]
