"""Inside the trace: what a program run in full at the target shape wrote, for the judge to check.

The checks compare outputs at check, span and long-row shapes, never at the target launch itself: a
kernel whose arithmetic changes past the program counts or sizes those shapes reach (``pid >= 200``
halving a GEMM's K loop) was exact everywhere it was compared.  The trace already runs some programs
of the real target launch in full (the lead program, and others whose sparse counts differ, densely
up to their trip limits).  This module records, for such a program, the elements it stored and their
values right after it ran, and which storages it read and touched with atomics; the judge
(``judge/target_outputs.py``) computes the reference for those elements from the trace's own input
values and compares.  A program whose loops were sampled (past their dense trip limit) is marked
incomplete and not compared.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import torch

#: A program's stores kept for the judge, at most (elements): a wider program keeps a seeded sample of them.
MAX_ELEMENTS = 1 << 12


class ProgramOutputs:
    """Collects one program's accesses while it runs (:meth:`note`), then its stored values (:meth:`finish`)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.reads: set[int] = set()          # storage starts loaded from
        self.atomics: set[int] = set()        # storage starts an atomic touched
        self.stores: dict[int, tuple[Any, list[np.ndarray]]] = {}   # storage start -> (tensor info, addresses)

    def note(self, kind: str, parts: list, elem_bytes: int) -> None:
        for tensor, addrs in parts:
            if kind == "load":
                self.reads.add(tensor.start)
            elif kind == "atomic":
                self.atomics.add(tensor.start)
            else:
                self.stores.setdefault(tensor.start, (tensor, []))[1].append(
                    np.asarray(addrs, dtype=np.int64).copy())

    def finish(self, complete: bool, rng: np.random.Generator) -> dict[str, Any]:
        """What the program wrote, read back from memory now (before any other program runs)."""
        stores = []
        for start, (tensor, chunks) in self.stores.items():
            addrs = np.concatenate(chunks)
            if addrs.size > MAX_ELEMENTS:       # (np.unique of millions of addresses costs seconds: sample first)
                addrs = addrs[rng.choice(addrs.size, MAX_ELEMENTS, replace=False)]
            addrs = np.unique(addrs)
            offsets = addrs - start
            memory = np.ctypeslib.as_array((ctypes.c_uint8 * tensor.storage_bytes).from_address(start))
            raw = memory[(offsets[:, None] + np.arange(tensor.elem_bytes)).reshape(-1)].copy()
            stores.append({"start": start, "addrs": addrs, "raw": raw, "elem_bytes": tensor.elem_bytes,
                           "dtype": tensor.dtype})
        return {"pid": self.pid, "complete": bool(complete), "reads": sorted(self.reads),
                "atomics": sorted(self.atomics), "stores": stores}


def loops_complete(execs: list[list[Any]]) -> bool:
    """Whether every ``for`` loop of a program ran every trip (``record_trace`` exec rows:
    ``[loop, kind, n, parent, plan, sparse]``)."""
    return all(kind != "for" or len(plan) == n for _, kind, n, _, plan, _ in execs)


def resolve(launches: list[dict[str, Any]], inputs: list[torch.Tensor], outputs: Any, blob) -> None:
    """Turn each launch's captured programs into what the judge reads: storages named ``input:i`` /
    ``output:j`` / ``scratch``, and per output the stored elements (flat indices into it) and values."""
    items = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    roles = {t.untyped_storage().data_ptr(): f"input:{i}" for i, t in enumerate(inputs)}
    outs = {}
    for j, out in enumerate(items):
        if isinstance(out, torch.Tensor):
            roles.setdefault(out.untyped_storage().data_ptr(), f"output:{j}")
            outs.setdefault(out.untyped_storage().data_ptr(), (j, out))
    given: set[int] = set()                    # storages some earlier launch was given (it may have written them)
    for launch in launches:
        checked = []
        for program in launch.pop("_outputs", []):
            # what makes the program's stores depend on other programs: reading what an earlier launch may
            # have written (the trace ran only some of its programs), and atomics into an output or into
            # a storage it reads back; a storage no earlier launch was given holds what the host put there
            produced = {s for s in program["reads"] if s in given and not roles.get(s, "").startswith("input:")}
            shared = {s for s in program["atomics"] if s in program["reads"] or roles.get(s, "").startswith("output:")}
            entry = {"pid": program["pid"], "complete": program["complete"],
                     "reads_produced": sorted({roles.get(s, "scratch") for s in produced}),
                     "atomics_shared": sorted({roles.get(s, "scratch") for s in shared}),
                     "stored": sorted({roles.get(s["start"], "scratch") for s in program["stores"]}),
                     "outputs": []}
            for store in program["stores"]:
                found = outs.get(store["start"])
                if found is None:
                    continue
                j, out = found
                elem = out.element_size()
                offset = store["addrs"] - out.data_ptr()
                values = store["raw"].reshape(-1, store["elem_bytes"])
                if store["elem_bytes"] != elem or not out.is_contiguous():
                    entry["complete"] = False          # stored through another view: not comparable
                    continue
                inside = (offset >= 0) & (offset % elem == 0) & (offset < out.numel() * elem)
                entry["outputs"].append({
                    "output": j, "shape": list(out.shape), "dtype": str(out.dtype).replace("torch.", ""),
                    "index": blob.put((offset[inside] // elem).astype(np.int64)),
                    "values": blob.put(np.ascontiguousarray(values[inside]).reshape(-1))})
            checked.append(entry)
        launch["checked_programs"] = checked
        given.update(t["start"] for t in launch["tensors"])
