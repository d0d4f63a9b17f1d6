"""Judge the device job's outputs against the reference run on the same device (the verifier's tolerance).

Whole outputs (check shapes) go through :func:`kernelfoundry.evaluate.judge.correctness.compare`.  A
sampled output (a target shape) must match the reference at every sampled element under the
same rule, have non-finite values exactly where the reference has as many, and its sum and
absolute sum over all elements must lie within the sum of the per-element tolerances.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from ..sandbox import BlobReader, ChannelError
from ..evaluate import MalformedReport, compare, output_scale, output_tensor
from ..task import Task
from .child import sample_indices


def judge_outputs(task: Task, checks: list[dict[str, Any]], report: Any, blob: BlobReader,
                  reference: Callable[[dict[str, Any], int], list[torch.Tensor]], seed: int) -> str | None:
    """None when every check run matches; else why not.  *reference(shape, call)* gives the reference's
    outputs (on the device); raises MalformedReport for a report that does not fit the checks."""
    if not isinstance(report, dict) or not isinstance(report.get("runs"), list):
        raise MalformedReport("no device check report")
    if report.get("error") is not None:
        index = report.get("failed_run")
        where = _where(checks[index]) if isinstance(index, int) and 0 <= index < len(checks) else "a device run"
        return f"{where}: {str(report['error'])[:800]}"
    if len(report["runs"]) != len(checks):
        raise MalformedReport(f"{len(report['runs'])} device runs reported, {len(checks)} planned")
    for index, (check, run) in enumerate(zip(checks, report["runs"])):
        refs = reference(check["shape"], check["call"])
        outs = run.get("outputs") if isinstance(run, dict) else None
        if not isinstance(outs, list) or len(outs) != len(refs):
            return f"{_where(check)}: launch returned {len(outs or [])} outputs, the reference {len(refs)}"
        for j, (entry, ref) in enumerate(zip(outs, refs)):
            try:
                why = _compare_entry(entry, ref.detach().cpu(), blob, check.get("sample"), seed + index, task)
            except (ChannelError, KeyError, TypeError, ValueError) as exc:
                raise MalformedReport(f"device output {j}: {exc}") from None
            if why:
                return f"{_where(check)}, output {j} {why}"
    return None


def _where(check: dict[str, Any]) -> str:
    shape = ", ".join(f"{k}={v}" for k, v in check["shape"].items())
    params = ", ".join(f"{k}={v}" for k, v in check["params"].items())
    kind = "target" if check.get("sample") else "check"
    return f"on the device at {kind} shape {{{shape}}} with {params or 'its defaults'}"


def _compare_entry(entry: dict[str, Any], ref: torch.Tensor, blob: BlobReader, sample: int | None, seed: int,
                   task: Task) -> str | None:
    if sample is None:
        return compare(output_tensor(entry, blob), ref, task.atol, task.rtol)
    if list(entry["shape"]) != list(ref.shape):
        return f"has shape {tuple(entry['shape'])}, the reference {tuple(ref.shape)}"
    flat = ref.reshape(-1)
    idx = sample_indices(flat.numel(), int(sample), seed)
    got = output_tensor({**entry, "shape": [int(idx.numel())]}, blob)
    why = compare(got, flat[idx], task.atol, task.rtol)
    if why:
        return f"(sampled {idx.numel()} of {flat.numel()} elements) {why}"
    wide = flat.to(torch.float64)
    finite = torch.isfinite(wide)
    sums = entry["sums"]
    if int(sums["nonfinite"]) != int((~finite).sum()):
        return f"has {int(sums['nonfinite'])} NaN/Inf elements, the reference {int((~finite).sum())}"
    abs_sum = float(torch.where(finite, wide.abs(), 0).sum())
    allowed = flat.numel() * task.atol * output_scale(wide[finite].numpy()) + task.rtol * abs_sum
    for name, value in (("sum", float(torch.where(finite, wide, 0).sum())), ("abs_sum", abs_sum)):
        got_value = float(sums[name])
        if not math.isfinite(got_value) or abs(got_value - value) > allowed * (1 + 1e-9) + 1e-12:
            return (f"differs over the whole tensor: its {name.replace('_', ' ')} is {got_value:.6g}, the "
                    f"reference's {value:.6g} (allowed {allowed:.3g} by atol/rtol summed over elements)")
    return None
