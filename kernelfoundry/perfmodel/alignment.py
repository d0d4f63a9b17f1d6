"""Which tensors of a launch Triton cannot access with vector loads: rows not 16-element aligned.

Triton specialises every integer kernel argument that is divisible by 16 (``tt.divisibility =
16``) and every pointer aligned to 16 bytes; its axis analysis then proves that a row offset
``row * stride`` keeps 16-byte alignment and emits 16-byte vector loads and stores
(``ld.global.v4``).  A row stride that is not a multiple of 16 elements leaves a divisibility
of 1: every access along the row is issued element by element.  The trace does not record the
kernel's arguments, so a launch's tensors are matched to the task's inputs by their storage size
(``TensorTraffic.tensor_bytes``) and a tensor counts as unaligned when its innermost dim (the
row stride of a contiguous input with two or more dims) is not a multiple of 16.
"""

from __future__ import annotations

import math

from ..records import LaunchTrace
from ..task import DTYPE_BYTES, Task

#: Row alignment (elements) Triton's divisibility specialisation needs.
DIVISIBILITY = 16


def unaligned_bytes(task: Task, shape: dict[str, int]) -> frozenset[int]:
    """Storage sizes (bytes) of the task's inputs whose rows are not 16-element aligned at *shape*."""
    out = set()
    for spec in task.inputs:
        dims = spec.concrete_shape(shape)
        if len(dims) >= 2 and dims[-1] % DIVISIBILITY and dims[-1] > 1:
            out.add(math.prod(dims) * DTYPE_BYTES[spec.dtype])
    return frozenset(out)


def scalar_share(launch: LaunchTrace, unaligned: frozenset[int]) -> float:
    """Share of the launch's bytes moved on unaligned tensors (0 when none is)."""
    if not unaligned:
        return 0.0
    total = moved = 0.0
    for t in launch.traffic.values():
        b = t.load_bytes + t.store_bytes
        total += b
        if t.tensor_bytes in unaligned:
            moved += b
    return moved / total if total else 0.0
