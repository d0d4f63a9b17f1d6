"""Outputs of the real target launch: what programs the trace ran in full wrote, against the reference.

The checks compare whole outputs at shapes the CPU can run; the target launch itself was only
traced.  A kernel whose arithmetic changes past the program counts or sizes the checks reach (``pid >=
200`` halving a GEMM's K loop, ``M >= 1024`` changing a split) was exact wherever it was compared.
Here the elements that programs of the target launch stored, when the trace ran them in full
(``child/program_outputs.py``), are compared with the reference computed for those elements alone:
the task's separable symbols (:mod:`separable`) are cut to the indices the elements sit at, every
other dimension keeps its target extent, and the inputs hold the values the trace's loads read
(:mod:`trace_values`).  Tolerances are the checks' own (:func:`correctness.compare`).

Not compared (counted in the gate's details, by reason): programs whose loops were sampled (past the
dense trip limit), programs that read a storage an earlier launch was given (what its unsampled
programs wrote is not there) or put atomics into an output or a storage they read back (a split-K
partial is not the final value), outputs a later launch is given (it may still change
them), and elements whose reference would need more than
:data:`INPUT_BUDGET` input elements or :data:`REFERENCE_FLOPS` operations.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import numpy as np
import torch

from ...harness.inputs import TORCH_DTYPES
from ...sandbox import BlobReader
from ...task import Task
from .correctness import _as_list, base_rms, compare, load_reference
from .separable import separable_symbols
from .trace_values import is_tiled, trace_input_values

#: Input elements the reference for one program's checked elements may need, at most.
INPUT_BUDGET = 1 << 24
#: Floating-point operations the reference at the cut may take, at most (a fraction of a second on a CPU core).
REFERENCE_FLOPS = 2e9
#: Indices kept along each separable symbol (a seeded sample of those the program wrote).
MAX_INDICES = 64


class TargetCheckError(ValueError):
    """A program record the judge cannot read (malformed)."""


def check_target_outputs(task: Task, seed: int, records: list[dict[str, Any]], blob: BlobReader
                         ) -> tuple[str | None, dict[str, Any]]:
    """(why the first wrong program is wrong, or None; counts: programs and elements compared, skips by reason)."""
    compared, elements, skipped = 0, 0, Counter()
    for record in records:
        env = dict(task.target_shapes[int(record["shape_index"])])
        launches = record["launches"]
        tiled = record.get("tiled_inputs") or []
        unmapped = any(is_tiled(task, env, i) and not (i < len(tiled) and tiled[i]) for i in range(len(task.inputs)))
        for k, launch in enumerate(launches):
            # a later launch given an output may still change it (a second pass normalising in place)
            later = {t.get("role") for after in launches[k + 1:] for t in after.get("tensors", [])}
            for program in launch.get("checked_programs", []):
                why = "inputs not mapped" if unmapped else _skip(program)
                if why:
                    skipped[why] += 1
                    continue
                counted = 0
                for entry in program["outputs"]:
                    if f"output:{entry['output']}" in later:
                        skipped["a later launch takes the output"] += 1
                        continue
                    reason, n = _check_output(task, env, seed, entry, blob, int(program["pid"]))
                    if reason is None and n == 0:
                        skipped["reference too large"] += 1
                        continue
                    if reason is not None:
                        return (f"program {program['pid']} of {launch['kernel']} (of {launch['num_programs']}) at "
                                f"the target shape {env}, config {record['config']}: output {entry['output']} "
                                f"{reason}; the checks' shapes never ran this program id or size, so the kernel is "
                                "wrong only where nothing else compared it", {})
                    counted += n
                compared += counted > 0
                elements += counted
    return None, {"programs": compared, "elements": elements, "skipped": dict(skipped)}


def _skip(program: dict[str, Any]) -> str | None:
    if not program.get("complete"):
        return "loops sampled"
    if program.get("atomics_shared"):
        return "atomics into an output or a storage read back"
    if program.get("reads_produced"):
        return "reads what an earlier launch wrote"
    if any(str(role).startswith("input:") for role in program.get("stored", [])):
        return "writes an input"
    return None


def _check_output(task: Task, env: dict[str, int], seed: int, entry: dict[str, Any], blob: BlobReader,
                  pid: int) -> tuple[str | None, int]:
    """(why the stored elements of one output are wrong, or None; how many were compared)."""
    j, shape = int(entry["output"]), tuple(int(d) for d in entry["shape"])
    dtype = TORCH_DTYPES.get(entry["dtype"])
    index = np.asarray(blob.get(entry["index"]), dtype=np.int64).reshape(-1)
    raw = np.asarray(blob.get(entry["values"]), dtype=np.uint8).reshape(-1)
    if dtype is None or (index.size and (index.min() < 0 or index.max() >= math.prod(shape))):
        raise TargetCheckError("a checked program's output entry is malformed")
    elem = torch.empty((), dtype=dtype).element_size()
    if raw.size != index.size * elem:
        raise TargetCheckError("a checked program's values do not match its elements")
    if not index.size:
        return None, 0
    got = torch.from_numpy(raw.copy()).view(dtype)
    where = np.unravel_index(index, shape)
    axes_of = {s: axes[j] for s, axes in separable_symbols(task).items() if j < len(axes)}
    if any(a >= len(shape) for axes in axes_of.values() for a in axes):
        return f"has {len(shape)} dimensions at the target shape, fewer than the reference's", 0
    rng = random.Random(f"{seed}:target-outputs:{pid}:{j}")
    keep = np.ones(index.size, dtype=bool)
    subsets: dict[str, np.ndarray] = {}
    for symbol, axes in axes_of.items():
        seen = np.unique(np.concatenate([where[a] for a in axes]))
        chosen = np.array(sorted(rng.sample(seen.tolist(), MAX_INDICES))) if seen.size > MAX_INDICES else seen
        subsets[symbol] = chosen
        for a in axes:
            keep &= np.isin(where[a], chosen)
    while not _affordable(task, env, subsets):
        widest = max(subsets, key=lambda s: subsets[s].size, default=None)
        if widest is None or subsets[widest].size <= 1:
            return None, 0
        subsets[widest] = subsets[widest][: subsets[widest].size // 2]
        for a in axes_of[widest]:
            keep &= np.isin(where[a], subsets[widest])
    if not keep.any():
        return None, 0
    inputs = []
    for i, spec in enumerate(task.inputs):
        full = spec.concrete_shape(env)
        picks = [subsets[d] if isinstance(d, str) and d in subsets else np.arange(n) for d, n in zip(spec.shape, full)]
        flat = np.ravel_multi_index(np.ix_(*picks), full) if full else np.zeros((), dtype=np.int64)
        inputs.append(trace_input_values(task, env, seed, i, flat).reshape(tuple(len(p) for p in picks)))
    try:
        outputs = _as_list(load_reference(task)(*inputs))
    except Exception:          # noqa: BLE001 - the reference at a cut of the target: nothing to compare with
        return None, 0
    if j >= len(outputs):
        return f"is output {j}; the reference returns {len(outputs)}", 0
    ref = outputs[j]
    axis_symbol = {a: s for s, axes in axes_of.items() for a in axes}
    want = tuple(env[axis_symbol[a]] if a in axis_symbol else ref.shape[a] for a in range(ref.dim()))
    if want != shape:
        return f"has shape {shape} at the target shape, the reference's is {want}", 0
    positions = tuple(torch.from_numpy(np.searchsorted(subsets[axis_symbol[a]], where[a][keep]) if a in axis_symbol
                                       else where[a][keep]) for a in range(len(shape)))
    expected = ref[positions]
    why = compare(got[torch.from_numpy(keep)], expected, task.atol, task.rtol, base_rms(task, "normal")[j])
    return (f"is wrong at {int(keep.sum())} checked elements: {why}" if why else None), int(keep.sum())


def _affordable(task: Task, env: dict[str, int], subsets: dict[str, np.ndarray]) -> bool:
    """Whether the reference at the cut (the target with separable symbols cut to *subsets*) fits
    :data:`INPUT_BUDGET` and :data:`REFERENCE_FLOPS` (its ops counted on meta tensors)."""
    cut = {**env, **{s: int(v.size) for s, v in subsets.items()}}
    if sum(math.prod(spec.concrete_shape(cut)) for spec in task.inputs) > INPUT_BUDGET:
        return False
    from ...perfmodel import profile_reference
    try:
        profile = profile_reference(task, cut)
    except Exception:          # noqa: BLE001 - not countable: judged by its inputs alone
        return True
    return not profile.exact or profile.gemm_flops + profile.vector_flops <= REFERENCE_FLOPS
