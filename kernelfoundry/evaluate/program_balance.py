"""Work balance over a launch's programs, from the check runs (where every program runs).

The trace counts a launch from a few programs (first, last, a few random ones), so a kernel
could leave a large share of its work to a few programs the random picks rarely hit: one
program in 64 doing the rows the others skip.  Output and input coverage catch this when
the skipped work would have written an output or read an input once; they cannot when the
output is small (a GEMM reduced to a scalar) or when programs re-read the same inputs (tiles
of a GEMM).  The check runs execute every program, so the child meters each one's work
(unmasked elements loaded and stored, plus multiply-adds of its dots) and refuses a launch
whose work sits in a few heavy programs:

* *heavy*: a program doing more than :data:`HEAVY_FACTOR` times the median working program;
* refused when heavy programs are under :data:`RARE_SHARE` of the working programs yet do
  more than :data:`WORK_SHARE` of the work.

The first and last programs are always traced with their own weight, so they are left out,
and so are programs that do no work at all (a grid larger than the data: idle padding has its
own check).  Honest kernels spread their work: partial tiles at the edges are lighter, not
heavier, and a triangular or causal grid ramps by at most a few times.
"""

from __future__ import annotations

import numpy as np

#: Launches with fewer programs than this are not judged (the trace runs them all or most).
MIN_PROGRAMS = 16
HEAVY_FACTOR = 4.0
RARE_SHARE = 1.0 / 8.0
WORK_SHARE = 0.25


def concentrated_work(work: np.ndarray, kernel: str) -> str | None:
    """Why *work* (per program id, in launch order) hides in a few programs the trace would rarely
    sample, or None when it is spread evenly enough."""
    if work.size < MIN_PROGRAMS:
        return None
    middle = work[1:-1]
    working = middle[middle > 0]
    if working.size < MIN_PROGRAMS - 2:
        return None
    median = float(np.median(working))
    heavy = working[working > HEAVY_FACTOR * median]
    total = float(working.sum())
    if heavy.size == 0 or heavy.size >= RARE_SHARE * working.size or heavy.sum() <= WORK_SHARE * total:
        return None
    ids = (np.flatnonzero(middle > HEAVY_FACTOR * median) + 1)[:4].tolist()
    return (f"kernel {kernel}: {heavy.size} of its {working.size} working programs (ids {ids}"
            f"{', ...' if heavy.size > 4 else ''}) do {heavy.sum() / total:.0%} of the work, each more than "
            f"{HEAVY_FACTOR:g}x the median program: the trace samples a few programs of each launch, so work "
            "left to a few heavy ones would go uncounted. Give every program an equal share of the work.")
