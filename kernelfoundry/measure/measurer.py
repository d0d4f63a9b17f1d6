"""The device step of one candidate: model-picked configs measured, correctness on the device, eager timed.

:class:`DeviceMeasurer` runs where the GPU is (a Ray actor with ``num_gpus=1``, or the
``verify`` command's own process).  For a candidate the model passed it

1. asks the model for its k fastest configs per target shape (:mod:`.topk`);
2. runs the candidate in a sandboxed child on the device (:mod:`.child`): every check shape
   with the model's best config, the first target shape with each of those k configs, then
   the k configs timed at every target shape;
3. runs the task's reference (trusted) on the same inputs on the same device and judges the
   outputs (:mod:`.judge`), and times the reference the same way (eager PyTorch);
4. returns the ``measured`` record: per target shape the measured best config, its predicted
   and measured latency, every timed config, the measured eager time and the speedup; the
   objective is the geometric mean of the measured speedups.

A kernel that faults, hangs or returns wrong values fails with a reason; the caller goes on.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

from ..candidate import HINT_PARAMS
from ..harness.payload import child_task
from ..records import VerifyResult
from ..task import Task, task_from_dict
from .timer import Hint, timer_from_spec
from .topk import top_configs

CHILD_MODULE = "kernelfoundry.measure.child"
SAMPLE = 65536            # elements compared one by one at a target shape (plus sums over all)


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values and min(values) > 0 else 0.0


class DeviceMeasurer:
    """Measures candidates on one device (see the module docstring); plain class, also a Ray actor."""

    def __init__(self, spec: dict[str, Any], *, wall_s: float = 120.0):
        self.spec = dict(spec)
        self.fake = spec["mode"] == "fake"
        self.device = "cpu" if self.fake else "cuda"
        self.wall_s = wall_s
        if not self.fake and not spec.get("device"):        # a Ray actor learns its own GPU here
            from .device import describe_gpu
            self.spec.update(describe_gpu(0))

    def ping(self) -> str:
        return str(self.spec.get("device"))

    def measure(self, task: Task | dict, source: str, verdict: VerifyResult, hardware: str, seed: int) -> dict:
        """The ``measured`` record (``passed`` False with a ``reason`` when the device refutes the kernel)."""
        from ..evaluate import MalformedReport, load_reference
        from ..harness.inputs import InputFactory
        from ..compiler import PTXAS_BROKER
        from ..sandbox import DATA_FILE, BlobReader, SandboxLimits, run_sandboxed
        from .judge import judge_outputs
        task = task_from_dict(task, check_files=False) if isinstance(task, dict) else task
        start = time.perf_counter()
        record = {k: self.spec.get(k) for k in ("device", "driver", "torch_version", "backend")}
        record.update(hardware=hardware, timer=self.spec["timer"].get("kind"), k=int(self.spec["k"]),
                      passed=False, reason="")
        top = top_configs(task, verdict.traces, verdict.param_space or {}, hardware, int(self.spec["k"]), seed=seed)
        shapes = sorted(top)
        if not shapes or not all(top[i] for i in shapes):
            record["reason"] = f"the model has no valid config on {hardware} at some target shape to measure"
            return record
        calls = iter(range(10_000, 20_000))
        best = top[shapes[0]][0]["config"]
        checks = [{"shape": dict(env), "params": best, "call": next(calls), "sample": None}
                  for env in task.check_shapes]
        if not self.fake:                     # the interpreter cannot afford a target shape; the device can
            checks += [{"shape": dict(task.target_shapes[shapes[0]]), "params": c["config"], "call": next(calls),
                        "sample": SAMPLE} for c in _distinct(top[shapes[0]])]
        timings = [{"shape": dict(task.target_shapes[i]), "call": next(calls),
                    "configs": [{"params": c["config"], "hint": _hint(c)} for c in top[i]]} for i in shapes]
        payload = {"source": source, "task": child_task(task.to_dict()), "device": self.device, "seed": seed,
                   "checks": checks, "timings": timings, "timer": self.spec["timer"],
                   "launch_timeout_s": max(1.0, 0.25 * self.wall_s)}
        env = {"TRITON_INTERPRET": "1" if self.fake else "0"}
        if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:        # Ray's one GPU for this actor
            env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
        limits = SandboxLimits(wall_s=self.wall_s, address_space_bytes=(16 if self.fake else 1 << 16) << 30,
                               rss_bytes=8 << 30, max_threads=128)
        outcome = run_sandboxed(CHILD_MODULE, payload, limits, env=env, extra_files=(DATA_FILE,),
                                gpu=not self.fake,       # GPU nodes in its root, ptxas through a broker
                                broker=None if self.fake else PTXAS_BROKER)
        result = outcome.result or {}
        record["seconds"] = round(time.perf_counter() - start, 3)
        if not outcome.ok or result.get("error") or not result.get("gates"):
            why = result.get("error") or outcome.reason
            record["reason"] = (f"the device job failed ({why}"
                                f"{'; last stage ' + outcome.progress if outcome.progress else ''})")[:1500]
            return record
        if not result["gates"][0].get("passed"):
            record["reason"] = f"the kernel does not load for the device: {result['gates'][0].get('reason')}"
            return record
        reference = load_reference(task)
        factory = InputFactory(task, seed)

        def ref_outputs(shape: dict[str, int], call: int) -> list:
            import torch
            with torch.no_grad():
                out = reference(*[t.to(self.device) for t in factory.make(shape, "normal", call=call)])
            return list(out) if isinstance(out, (tuple, list)) else [out]
        try:
            why = judge_outputs(task, checks, result.get("check"), BlobReader(outcome.files.get(DATA_FILE)),
                                ref_outputs, seed)
        except MalformedReport as exc:
            why = f"the device job returned a malformed report ({exc})"
        if why:
            record["reason"] = f"wrong on the device: {why}"[:2000]
            return record
        record["checked"] = len(checks)
        record["shapes"] = self._shapes(task, shapes, top, timings, result.get("timings"), hardware, seed)
        if any(s.get("measured_s") is None for s in record["shapes"]):
            record["reason"] = "no config ran on the device at some target shape: " + "; ".join(
                s["error"] for s in record["shapes"] if s.get("error"))[:1500]
            return record
        record["objective"] = _geomean([s["speedup"] for s in record["shapes"]])
        record["passed"] = True
        record["seconds"] = round(time.perf_counter() - start, 3)
        return record

    def _shapes(self, task, shapes, top, timings, measured, hardware, seed) -> list[dict]:
        """Per target shape: every timed config, the measured winner, eager PyTorch timed the same way."""
        from ..perfmodel import DO_BENCH, eager_estimate, load_hardware, profile_reference
        from ..harness.inputs import InputFactory
        from ..evaluate import load_reference
        timer = timer_from_spec(self.spec["timer"])
        spec = load_hardware(hardware)
        rows = measured if isinstance(measured, list) and len(measured) == len(shapes) else [[]] * len(shapes)
        out = []
        for i, entry, row in zip(shapes, timings, rows):
            configs = []
            for c, m in zip(top[i], list(row) + [None] * (len(top[i]) - len(row))):
                item = {k: c[k] for k in ("config", "predicted_s", "bound", "launch_s", "launches")}
                if isinstance(m, dict) and _positive(m.get("median_s")):
                    item.update(measured_s=float(m["median_s"]), spread=float(m.get("spread") or 0.0))
                else:
                    item["error"] = str((m or {}).get("error") or "not timed")[:300]
                configs.append(item)
            timed = [c for c in configs if "measured_s" in c]
            shape = {"shape_index": i, "shape": dict(task.target_shapes[i]), "configs": configs}
            if not timed:
                shape.update(measured_s=None, error=f"shape {i}: {configs[0].get('error')}")
                out.append(shape)
                continue
            win = min(timed, key=lambda c: c["measured_s"])
            eager_pred = eager_estimate(profile_reference(task, task.target_shapes[i]), spec, DO_BENCH).seconds
            reference = load_reference(task)
            inputs = None if self.fake else [t.to(self.device) for t in InputFactory(task, seed).make(
                entry["shape"], "normal", call=entry["call"])]          # a fake timer never calls: no target tensors
            eager = timer.time(lambda: reference(*inputs), Hint(predicted_s=eager_pred, bound="eager"))
            shape.update(config=win["config"], predicted_s=win["predicted_s"], measured_s=win["measured_s"],
                         spread=win["spread"], model_best={k: configs[0].get(k) for k in
                                                           ("config", "predicted_s", "measured_s")},
                         eager_predicted_s=eager_pred, eager_measured_s=eager.median_s, eager_spread=eager.spread,
                         speedup=eager.median_s / win["measured_s"])
            out.append(shape)
        return out


class MeasureStep:
    """The verifier's device step (:class:`kernelfoundry.evaluate.Verifier`): measure what the model passed
    on *hardware*'s device, with a :class:`DeviceMeasurer` or a Ray actor of one (its ``measure.remote``)."""

    def __init__(self, measurer: Any, task: Task | dict, hardware: str):
        self.measurer, self.task, self.hardware = measurer, task, hardware

    def confirm(self, verdict: dict[str, Any], result: VerifyResult, source: str, seed: int) -> dict[str, Any]:
        """*verdict* with the device's ``measured`` record (a failed ``device`` gate when it refutes it)."""
        args = (self.task, source, result, self.hardware, seed)
        try:
            remote = getattr(getattr(self.measurer, "measure", None), "remote", None)
            if remote is not None:
                import ray
                record = ray.get(remote(*args))
            else:
                record = self.measurer.measure(*args)
        except Exception as exc:  # noqa: BLE001 - a lost device fails this candidate, not the run
            record = {"passed": False, "reason": f"the device measurement failed: {type(exc).__name__}: {exc}"[:1500]}
        return merge_verdict(verdict, record)


def merge_verdict(verdict: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The verifier's verdict (``VerifyResult.to_dict()``) with the device's *record*: the objective becomes the
    measured one (the model's kept as ``predicted_objective``), or the candidate fails the ``device`` gate."""
    out = dict(verdict, measured=record, predicted_objective=verdict.get("objective"))
    gate = {"name": "device", "passed": bool(record.get("passed")), "reason": record.get("reason", ""),
            "seconds": float(record.get("seconds") or 0.0), "details": {}}
    out["gates"] = list(verdict.get("gates") or []) + [gate]
    if record.get("passed"):
        out["objective"] = record["objective"]
    else:
        out.update(passed=False, gate="device", reason=record.get("reason", ""))
    return out


def _hint(c: dict[str, Any]) -> dict[str, Any]:
    return {"predicted_s": c["predicted_s"], "bound": c["bound"], "launch_s": c["launch_s"],
            "launches": c["launches"]}


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _distinct(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The configs that compute differently (hints never change the values)."""
    seen, out = set(), []
    for c in configs:
        key = tuple(sorted((k, v) for k, v in c["config"].items() if k not in HINT_PARAMS))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out
