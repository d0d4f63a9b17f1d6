"""Ray workers: each one proposes (mutates) and verifies candidates; the driver only schedules.

A job goes through two stages on the same worker: ``propose`` (mutator -> new
source; cheap, lets the driver drop duplicates before paying for verification)
and ``verify`` (sandboxed gates + performance model).  Generated code never
runs in the driver; inside a worker it runs only in the verifier's sandbox.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import ray

from ..candidate import source_hash, verify_seed
from ..mutate.base import MutationRequest, ParentView, Proposal
from ..task import task_from_dict


def build_mutator(spec: dict[str, Any], seed: int):
    """Instantiate the mutator a run is configured with (inside the worker process)."""
    kind = spec.get("type", "builtin")
    if kind == "builtin":
        from ..mutate.builtin import BuiltinMutator
        return BuiltinMutator(seed=seed)
    if kind == "llm":
        from ..mutate.llm import LLMMutator
        from ..mutate.llm_client import ModelSpec
        models = [ModelSpec(**m) for m in spec["models"]]
        return LLMMutator(models, prompt_dir=spec.get("prompt_dir"), seed=seed,
                          timeout_s=spec.get("timeout_s", 120.0))
    raise ValueError(f"unknown mutator type {kind!r}")


class KernelWorker:
    """The work a Ray actor does.  Plain class so tests can drive it without Ray."""

    def __init__(self, task: dict[str, Any], hardware: list[str], mutator: dict[str, Any],
                 verify_options: dict[str, Any], worker_index: int = 0, verdict_cache: str | None = None):
        self.task = task_from_dict(task, check_files=False)
        self.hardware = list(hardware)
        self.verify_options = dict(verify_options)
        self.cache = None
        if verdict_cache:
            from ..evaluate.verdict_cache import VerdictCache, context_key
            self.cache = VerdictCache(verdict_cache, context_key(task, self.hardware, self.verify_options))
        self.mutator = build_mutator(mutator, seed=worker_index)
        self.name = f"w{worker_index}@{os.uname().nodename}:{os.getpid()}"

    def ping(self) -> str:
        return self.name

    def propose(self, job: dict[str, Any]) -> dict[str, Any]:
        """Stage 1: a mutation request in, a proposal out (never raises)."""
        start = time.time()
        if job["kind"] == "seed":
            proposal = Proposal(source=job["source"], mutator="seed", description=job.get("description", ""))
        else:
            request = MutationRequest(
                task=self.task, parent=ParentView(**job["parent"]), kind=job["kind"],
                inspirations=[ParentView(**p) for p in job.get("inspirations", [])],
                target_cell=job.get("target_cell"), seed=int(job["seed"]), prompt=job.get("prompt"),
                operator_order=job.get("operator_order"), experiences=list(job.get("experiences") or []))
            try:
                proposal = self.mutator.propose(request)
            except Exception as exc:        # a mutator bug must not kill the run
                proposal = Proposal(source=None, mutator=getattr(self.mutator, "name", "mutator"),
                                    error=f"mutator raised {type(exc).__name__}: {exc}")
            if not proposal.parent_ids:
                proposal.parent_ids = tuple([job["parent"]["id"]] + [p["id"] for p in job.get("inspirations", [])
                                                                     if job["kind"] == "crossover"][:1])
        out = proposal.to_dict()
        out["hash"] = source_hash(proposal.source) if proposal.source else None
        out["seconds"] = time.time() - start
        out["worker"] = self.name
        return out

    def verify(self, source: str) -> dict[str, Any]:
        """Stage 2: all gates and the performance model on *source* (never raises).

        The verifier's seed comes from the source (:func:`verify_seed`), so a verdict is the
        same in every run; with a verdict cache, a source verified before is read back.
        """
        from ..evaluate.pipeline import verify
        start = time.time()
        out = self.cache.get(source) if self.cache is not None else None
        if out is not None:
            out["cached"] = True
        else:
            result = verify(self.task, source, self.hardware, seed=verify_seed(source), **self.verify_options)
            out = result.to_dict()
            if self.cache is not None:
                self.cache.put(source, out)
        out["worker"] = self.name
        out["wall_seconds"] = time.time() - start
        return out


@dataclass
class InFlight:
    job: dict[str, Any]
    stage: str                       # "propose" | "verify"
    worker: int
    started: float
    proposal: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class WorkerPool:
    """K Ray actors, each with at most one call in flight; dead actors are replaced."""

    def __init__(self, n: int, actor_cls: type, init_kwargs: dict[str, Any], *, num_cpus: float = 1.0):
        self.n = n
        self.remote_cls = ray.remote(num_cpus=num_cpus, max_restarts=0)(actor_cls)
        self.init_kwargs = init_kwargs
        self.actors = [self._spawn(i) for i in range(n)]
        self.futures: dict[Any, InFlight] = {}
        self.replaced = 0

    def _spawn(self, index: int):
        return self.remote_cls.remote(worker_index=index, **self.init_kwargs)

    def ready(self, timeout_s: float = 120.0) -> list[str]:
        """Wait until every actor answers (fails fast if Ray cannot start them)."""
        return ray.get([a.ping.remote() for a in self.actors], timeout=timeout_s)

    def busy_workers(self) -> set[int]:
        return {f.worker for f in self.futures.values()}

    def idle_workers(self) -> list[int]:
        busy = self.busy_workers()
        return [i for i in range(self.n) if i not in busy]

    def submit(self, worker: int, stage: str, flight: InFlight, *args) -> None:
        flight.stage, flight.worker = stage, worker
        ref = getattr(self.actors[worker], stage).remote(*args)
        self.futures[ref] = flight

    def wait(self, timeout_s: float) -> list[tuple[InFlight, dict[str, Any] | None, str | None]]:
        """Finished calls as (flight, result, error); a dead actor is replaced and reported as error."""
        if not self.futures:
            return []
        done, _ = ray.wait(list(self.futures), num_returns=1, timeout=timeout_s)
        if done:   # collect everything else that is already finished too
            more, _ = ray.wait([f for f in self.futures if f not in done], num_returns=len(self.futures) - len(done),
                               timeout=0)
            done = list(done) + list(more)
        out = []
        for ref in done:
            flight = self.futures.pop(ref)
            try:
                out.append((flight, ray.get(ref), None))
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                self.actors[flight.worker] = self._spawn(flight.worker)
                self.replaced += 1
                out.append((flight, None, f"worker died during {flight.stage}: {type(exc).__name__}"))
            except ray.exceptions.RayTaskError as exc:
                out.append((flight, None, f"worker error during {flight.stage}: {exc.cause!r}"))
        return out

    def shutdown(self) -> None:
        """Kill the workers (and with them their jobs in flight); never raises.

        It runs while an exception (Ctrl-C, an error) is propagating: it must not mask it.
        Ray refuses ``cancel(force=True)`` for actor tasks; killing the actor ends them.
        """
        for actor in self.actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - an actor already gone is fine
                pass
        self.futures.clear()
