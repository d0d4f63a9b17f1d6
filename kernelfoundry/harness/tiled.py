"""Target-shape trace inputs full of real values at the memory cost of one small tile.

A 4096 x 393216 fp32 input is 6.4 GB; filling it would take the trace seconds and
gigabytes, leaving it empty (zero pages) lets a kernel skip work on all-zero tiles
that real inputs never have.  So a large input is a run of identical tiles: one
``memfd`` tile (a few MiB of values drawn from the task's value profile) mapped
copy-on-write again and again over one contiguous virtual range.  Reads see real
values everywhere; memory holds one tile plus the pages a kernel writes.  The
values repeat with the tile's period, which no kernel can exploit for speed without
being wrong on real data (correctness runs use fresh non-repeating inputs).
Linux only; elsewhere (or when mapping fails) the input is filled directly when small
enough, else left untouched as before.

Every input the candidate sees, at a check, span or target shape, starts at an address that is a
multiple of :data:`INPUT_ALIGN` (2 MiB) in a mapping of its own (:func:`placed`, and the tiled
reservation here): where an input lives tells a kernel nothing about which run it is in (a
``x.data_ptr() % 4096 == 0`` test used to be true at the target shape only).
"""

from __future__ import annotations

import ctypes
import math
import mmap
import os
from dataclasses import dataclass, field

import numpy as np
import torch

#: Inputs up to this size are filled directly.
DIRECT_BYTES = 16 << 20
MIN_TILE_BYTES = 2 << 20
MAX_MAPPINGS = 8192
#: Every input starts at a multiple of this (the huge-page size: large anonymous mappings get it anyway).
INPUT_ALIGN = 2 << 20

_PROT_NONE, _PROT_RW = 0x0, 0x1 | 0x2
_MAP_SHARED, _MAP_PRIVATE, _MAP_FIXED, _MAP_ANONYMOUS, _MAP_NORESERVE = 0x01, 0x02, 0x10, 0x20, 0x4000


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


@dataclass
class TiledMapping:
    """A contiguous virtual range made of copies of one tile; :meth:`release` unmaps it."""

    address: int
    length: int
    fd: int
    reserved: tuple[int, int] = (0, 0)         # the whole reservation (base, length) to unmap
    tile: np.ndarray | None = field(default=None, repr=False)   # the tile's bytes (uint8)
    _released: bool = field(default=False, repr=False)

    def release(self) -> None:
        if not self._released:
            self._released = True
            base, length = self.reserved if self.reserved[1] else (self.address, self.length)
            _libc().munmap(ctypes.c_void_p(base), length)
            os.close(self.fd)


def _map_tiles(tile: bytes, total: int) -> TiledMapping | None:
    """Map *tile* repeatedly over at least *total* bytes; None when the platform refuses."""
    if not hasattr(os, "memfd_create"):
        return None
    libc = _libc()
    tile_len = len(tile)
    count = math.ceil(total / tile_len)
    length = count * tile_len
    fd = os.memfd_create("kf-trace-input")
    try:
        os.ftruncate(fd, tile_len)
        os.pwrite(fd, tile, 0)
        reserved = length + INPUT_ALIGN
        start = libc.mmap(None, reserved, _PROT_NONE, _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
        if start in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap reserve failed")
        base = start + (-start) % INPUT_ALIGN
        for i in range(count):
            got = libc.mmap(base + i * tile_len, tile_len, _PROT_RW, _MAP_PRIVATE | _MAP_FIXED, fd, 0)
            if got != base + i * tile_len:
                libc.munmap(ctypes.c_void_p(start), reserved)
                raise OSError(ctypes.get_errno(), "mmap of a tile failed")
    except OSError:
        os.close(fd)
        return None
    return TiledMapping(address=base, length=length, fd=fd, reserved=(start, reserved))


def tile_bytes_for(total: int, elem_bytes: int) -> int:
    """A page-aligned tile size that keeps the number of mappings under :data:`MAX_MAPPINGS`."""
    size = MIN_TILE_BYTES
    while math.ceil(total / size) > MAX_MAPPINGS:
        size *= 2
    return size - size % (mmap.PAGESIZE * elem_bytes // math.gcd(mmap.PAGESIZE, elem_bytes))


def tiled_tensor(shape: tuple[int, ...], dtype: torch.dtype, tile: torch.Tensor) -> tuple[torch.Tensor, TiledMapping] | None:
    """A tensor of *shape* whose memory repeats *tile* (a 1-D tensor of *dtype*), or None."""
    elem = torch.empty((), dtype=dtype).element_size()
    total = math.prod(shape) * elem
    raw = tile.contiguous().view(torch.uint8).numpy().tobytes()
    mapping = _map_tiles(raw, total)
    if mapping is None:
        return None
    mapping.tile = np.frombuffer(raw, dtype=np.uint8)
    buffer = (ctypes.c_char * mapping.length).from_address(mapping.address)
    flat = torch.frombuffer(buffer, dtype=torch.uint8, count=total)
    return flat.view(dtype).view(shape), mapping


def aligned_empty(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor | None:
    """A contiguous tensor at the start of an :data:`INPUT_ALIGN`-aligned private anonymous mapping of its
    own (zero pages, committed only where written; freed with the tensor), or None when mapping fails."""
    nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
    try:
        memory = mmap.mmap(-1, nbytes + INPUT_ALIGN, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (OSError, ValueError, AttributeError, OverflowError):
        return None
    view = ctypes.c_char.from_buffer(memory)
    offset = (-ctypes.addressof(view)) % INPUT_ALIGN
    del view                                    # (an exported pointer would pin the mapping forever)
    raw = torch.frombuffer(memory, dtype=torch.uint8, count=max(nbytes, 1), offset=offset)[:nbytes]
    return raw.view(dtype).view(tuple(shape))


def placed(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of *tensor* (contiguous) where :func:`aligned_empty` puts it, as every trace input is;
    *tensor* itself when mapping fails."""
    out = aligned_empty(tuple(tensor.shape), tensor.dtype)
    if out is None:
        return tensor
    out.copy_(tensor.detach())
    return out


def filled_input(shape: tuple[int, ...], dtype: torch.dtype, make_values,
                 ) -> tuple[torch.Tensor, TiledMapping | None]:
    """An input of *shape* filled by ``make_values(n_elements) -> 1-D tensor of dtype``.

    Small inputs are filled directly; large ones repeat a tile of values (see the module doc).
    Falls back to an untouched ``torch.empty`` when mapping is not possible.
    """
    elem = torch.empty((), dtype=dtype).element_size()
    numel = math.prod(shape)
    if numel * elem <= DIRECT_BYTES:
        return placed(make_values(numel).view(shape)), None
    tile_len = tile_bytes_for(numel * elem, elem) // elem
    tiled = tiled_tensor(shape, dtype, make_values(tile_len))
    if tiled is None:
        return torch.empty(shape, dtype=dtype), None
    return tiled


def release_all(mappings: list[TiledMapping | None]) -> None:
    for m in mappings:
        if m is not None:
            m.release()
