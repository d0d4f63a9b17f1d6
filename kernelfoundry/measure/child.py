"""The device job, run only inside the sandbox: the candidate on the device, raw outputs and timings out.

``python -m kernelfoundry.measure.child IN.json OUT.json`` (through ``run_sandboxed``).  Like the
verifier's child it judges nothing and never sees the reference: it draws the inputs the judge
will draw (:class:`~kernelfoundry.harness.inputs.InputFactory`, same seed and call number),
moves them to the device, runs ``launch`` under the dispatch guard, and reports each output (whole,
or a seeded sample plus sums over every element at a target shape); then it times each config
it was given with the payload's timer.

payload = {"source", "task" (reference stubbed), "device": "cuda" | "cpu", "seed": int,
"checks": [{"shape": {...}, "params": {...}, "call": int, "sample": int | None}],
"timings": [{"shape": {...}, "call": int, "configs": [{"params": {...}, "hint": {...}}]}],
"timer": {...}, "launch_timeout_s": float}.

result = {"gates": [load gate], "check": {"runs": [{"outputs": [...]}], "failed_run", "error"},
"timings": [[{"median_s", "spread", "reps"} | {"error": str}, ...] per timing entry]}.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..sandbox import DATA_FILE
from ..harness.job_main import job_main, loaded_candidate, report_progress


def sample_indices(numel: int, n: int, seed: int):
    """The element indices the child reports and the judge compares at a sampled shape (both draw them)."""
    import torch
    gen = torch.Generator().manual_seed(int(seed) % (2 ** 63))
    return torch.randint(0, max(1, numel), (min(n, numel),), generator=gen)


def output_entry(out, blob, sample: int | None, seed: int) -> dict[str, Any]:
    """One output for the judge: its bytes (or a sample of them) and float64 sums over all elements."""
    import numpy as np
    import torch
    flat = out.detach().reshape(-1)
    entry: dict[str, Any] = {"dtype": str(out.dtype).replace("torch.", ""), "shape": list(out.shape)}
    if sample is not None:
        wide = flat.to(torch.float64)
        finite = torch.isfinite(wide)
        entry["sums"] = {"sum": float(torch.where(finite, wide, 0).sum()),
                         "abs_sum": float(torch.where(finite, wide.abs(), 0).sum()),
                         "nonfinite": int((~finite).sum())}
        flat = flat[sample_indices(flat.numel(), sample, seed).to(flat.device)]
    values = flat.cpu().contiguous()
    raw = values.view(torch.uint16) if values.dtype == torch.bfloat16 else values
    entry["ref"] = blob.put(np.ascontiguousarray(raw.numpy()).reshape(-1))
    return entry


def _launch(loaded, inputs, params: dict[str, Any], device: str, timeout: float):
    """One guarded call on the device (the interpreter's own torch use would trip the guard on a CPU, where
    the verifier's checks already ran this call under it)."""
    import contextlib

    import torch
    from ..harness.guard import DispatchGuard
    from ..harness.loader import time_limit
    guard = contextlib.nullcontext() if device == "cpu" else DispatchGuard(poison_empty=True)
    with time_limit(timeout, "launch", cpu=False), guard:
        result = loaded.launch(*inputs, **params)
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    for i, item in enumerate(items):
        if not isinstance(item, torch.Tensor) or item.device.type != torch.device(device).type:
            raise RuntimeError(f"launch returned {type(item).__name__} at position {i}; expected a tensor on "
                               f"the {device} device")
    if device != "cpu":
        torch.cuda.synchronize()
    return items


def run_job(payload: dict[str, Any], data_path: Path | str) -> dict[str, Any]:
    from ..harness.inputs import InputFactory
    from ..harness.loader import describe_exception
    from .timer import Hint, timer_from_spec

    device, seed = str(payload["device"]), int(payload["seed"])
    timeout = float(payload.get("launch_timeout_s", 30.0))
    result: dict[str, Any] = {"gates": []}
    with loaded_candidate(payload, data_path, result, prefix="kf_device_") as (task, loaded, blob):
        if loaded is None:
            return result
        factory = InputFactory(task, seed)
        report_progress("device-correctness")
        runs, error, failed = [], None, None
        for index, check in enumerate(payload.get("checks", [])):
            inputs = [t.to(device) for t in factory.make(check["shape"], "normal", call=check["call"])]
            try:
                outs = _launch(loaded, inputs, check["params"], device, timeout)
            except BaseException as exc:  # noqa: BLE001 - anything the candidate raises fails the run
                error, failed = f"launch raised {describe_exception(exc, loaded.path)}", index
                break
            runs.append({"outputs": [output_entry(o, blob, check.get("sample"), seed + index) for o in outs]})
        result["check"] = {"runs": runs, "failed_run": failed, "error": error}
        if error is not None:
            return result
        report_progress("device-timing")
        timer = timer_from_spec(payload["timer"])
        result["timings"] = []
        for entry in payload.get("timings", []):
            inputs = [t.to(device) for t in factory.make(entry["shape"], "normal", call=entry["call"])]
            row = []
            for config in entry["configs"]:
                params = config["params"]
                try:
                    timing = timer.time(lambda: loaded.launch(*inputs, **params), Hint(**config["hint"]))
                    row.append(timing.to_dict())
                except BaseException as exc:  # noqa: BLE001 - a config that fails to run is left out
                    row.append({"error": describe_exception(exc, loaded.path)[:500]})
            result["timings"].append(row)
        return result


def main(argv: list[str] | None = None) -> int:
    return job_main(argv, "kernelfoundry.measure.child", lambda p, out: run_job(p, out.with_name(DATA_FILE)),
                    {"gates": []}, "device job error")


if __name__ == "__main__":
    sys.exit(main())
