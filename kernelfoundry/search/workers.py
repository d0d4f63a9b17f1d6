"""Ray workers: each one proposes (mutates) and verifies candidates; the driver only schedules.

A job goes through two stages on the same worker: ``propose`` (mutator -> new
source; cheap, lets the driver drop duplicates before paying for verification)
and ``verify`` (sandboxed gates + performance model).  Generated code never
runs in the driver; inside a worker it runs only in the verifier's sandbox.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ray

from ..candidate import source_hash
from ..mutate import MutationRequest, ParentView, Proposal
from ..task import task_from_dict

if TYPE_CHECKING:
    from ..evaluate import VerifyOptions


def build_mutator(spec: dict[str, Any], seed: int):
    """Instantiate the mutator a run is configured with (inside the worker process)."""
    kind = spec.get("type", "builtin")
    if kind == "builtin":
        from ..mutate import BuiltinMutator
        return BuiltinMutator(seed=seed)
    if kind == "llm":
        from ..mutate import LLMMutator, ModelSpec
        models = [ModelSpec(**m) for m in spec["models"]]
        return LLMMutator(models, prompt_dir=local_prompt_dir(spec), seed=seed,
                          timeout_s=spec.get("timeout_s", 120.0))
    raise ValueError(f"unknown mutator type {kind!r}")


def local_prompt_dir(spec: dict[str, Any]) -> str | None:
    """The run's prompt directory on this node: the driver's path, or a copy of the files it sent."""
    path = spec.get("prompt_dir")
    if path is None or Path(path).is_dir() or not spec.get("prompt_files"):
        return path
    import tempfile
    copy = Path(tempfile.mkdtemp(prefix="kernelfoundry-prompts-"))
    for name, text in spec["prompt_files"].items():
        (copy / Path(name).name).write_text(text, encoding="utf-8")
    return str(copy)


class KernelWorker:
    """The work a Ray actor does.  Plain class so tests can drive it without Ray."""

    def __init__(self, task: dict[str, Any], hardware: list[str], mutator: dict[str, Any],
                 verify_options: VerifyOptions | None = None, worker_index: int = 0, verdict_cache: str | None = None,
                 device: dict[str, Any] | None = None, trace_cache: str | None = None, side_by_side: bool | None = None):
        from ..evaluate import Verifier, VerifyOptions
        self.task = task_from_dict(task, check_files=False)
        self.hardware = list(hardware)
        options = verify_options or VerifyOptions()
        step = None                               # the device that measures what the model passes (docs/device.md)
        if device is not None:
            from ..measure import DeviceMeasurer, MeasureStep
            actors = device.get("actors") or []
            measurer = actors[worker_index % len(actors)] if actors else DeviceMeasurer(device["spec"])
            step = MeasureStep(measurer, task, self.hardware[0])
        cache = None
        if verdict_cache and Path(verdict_cache).parent.is_dir() and step is None:   # not on a node without the driver's files
            from ..evaluate import VerdictCache, context_key
            cache = VerdictCache(verdict_cache, context_key(task, self.hardware, options.to_dict()))
        traces = None
        if trace_cache:                   # the run's file, or this worker's memory on a node without it
            from ..evaluate import TraceCache
            traces = TraceCache(trace_cache if Path(trace_cache).parent.is_dir() else None)
        self.verifier = Verifier(self.task, self.hardware, options, verdict_cache=cache, trace_cache=traces,
                                 device=step, side_by_side=side_by_side)
        self.mutator = build_mutator(mutator, seed=worker_index)
        self.name = f"w{worker_index}@{os.uname().nodename}:{os.getpid()}"

    def ping(self) -> str:
        return self.name

    def propose(self, job: dict[str, Any]) -> dict[str, Any]:
        """Stage 1: a mutation request in, a proposal out (never raises)."""
        start = time.time()
        if job["kind"] == "seed":
            proposal = Proposal(source=job["source"], mutator="seed", description=job.get("description", ""))
        elif job["kind"] == "draft":               # a task without a seed: the LLM writes its first kernel
            proposal = self._draft(job)
        else:
            request = MutationRequest(
                task=self.task, parent=ParentView(**job["parent"]), kind=job["kind"],
                inspirations=[ParentView(**p) for p in job.get("inspirations", [])],
                target_cell=job.get("target_cell"), seed=int(job["seed"]), prompt=job.get("prompt"),
                operator_order=job.get("operator_order"), experiences=list(job.get("experiences") or []),
                model=job.get("model"), mode=job.get("mode"))
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

    def _draft(self, job: dict[str, Any]) -> Proposal:
        draft = getattr(self.mutator, "draft", None)
        if draft is None:
            return Proposal(source=None, mutator=getattr(self.mutator, "name", "mutator"),
                            error="the built-in mutator cannot write a first kernel; configure an LLM with --model")
        try:
            return draft(self.task, job["draft"], int(job["seed"]))
        except Exception as exc:  # noqa: BLE001 - a mutator bug must not kill the run
            return Proposal(source=None, mutator=getattr(self.mutator, "name", "mutator"),
                            error=f"mutator raised {type(exc).__name__}: {exc}")

    def verify(self, source: str) -> dict[str, Any]:
        """Stage 2: all gates and the performance model on *source* (never raises): the run's
        :class:`Verifier` (the verifier's seed from the source, the verdict cache, the device step)."""
        start = time.time()
        _, out = self.verifier.verify(source)
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
    attempt: int = 1                 # 2 once re-issued after its node left the cluster


def _placed(actor_cls: type) -> type:
    """*actor_cls* with a method that says on which node the actor runs."""
    def kf_node(self) -> tuple[str, str]:       # self-contained: pickled by value with the class
        import os as _os

        import ray as _ray
        node_id = _ray.get_runtime_context().get_node_id() or "?"
        return node_id, f"{_os.uname().nodename}/{node_id[:8]}"
    return type(actor_cls.__name__, (actor_cls,), {"kf_node": kf_node, "__module__": actor_cls.__module__,
                                                    "__qualname__": actor_cls.__qualname__ + "[placed]"})


class WorkerPool:
    """K Ray actors spread over the cluster's nodes, each with at most one call in flight.

    A dead actor is replaced on a live node; when the live nodes have no room left for it, its
    slot is retired (the run goes on with fewer workers) and an error is raised only when no
    worker is left.  ``lost`` in a failed call's flight says its node left the cluster, so the
    driver can re-issue the job.
    """

    def __init__(self, n: int, actor_cls: type, init_kwargs: dict[str, Any], *, num_cpus: float = 1.0):
        self.n = n
        self.num_cpus = num_cpus
        self.remote_cls = ray.remote(num_cpus=num_cpus, max_restarts=0,
                                     scheduling_strategy="SPREAD")(_placed(actor_cls))
        self.init_kwargs = init_kwargs
        self.actors = [self._spawn(i) for i in range(n)]
        self.futures: dict[Any, InFlight] = {}
        self.replaced = 0
        self.retired: set[int] = set()
        self.nodes: dict[int, tuple[str, str]] = {}        # worker -> (node id, label), once known
        self._locating: dict[Any, int] = {}                 # kf_node futures of new actors
        self.watch = GcsWatch()

    def _spawn(self, index: int):
        return self.remote_cls.remote(worker_index=index, **self.init_kwargs)

    def ready(self, timeout_s: float = 120.0) -> list[str]:
        """Wait until every actor answers (fails fast if Ray cannot start them); learns their nodes."""
        names = ray.get([a.ping.remote() for a in self.actors], timeout=timeout_s)
        for i, where in enumerate(ray.get([a.kf_node.remote() for a in self.actors], timeout=timeout_s)):
            self.nodes[i] = where
        return names

    def workers_per_node(self) -> dict[str, int]:
        """Live workers by node label (``starting`` for replacements not placed yet)."""
        self._locate(0)
        out: dict[str, int] = {}
        for i in range(self.n):
            if i not in self.retired:
                label = self.nodes[i][1] if i in self.nodes else "starting"
                out[label] = out.get(label, 0) + 1
        return dict(sorted(out.items()))

    def _locate(self, timeout_s: float) -> None:
        if not self._locating:
            return
        done, _ = ray.wait(list(self._locating), num_returns=len(self._locating), timeout=timeout_s)
        for ref in done:
            index = self._locating.pop(ref)
            try:
                self.nodes[index] = ray.get(ref)
            except ray.exceptions.RayError:
                pass                  # died before it answered: its next call reports that

    def busy_workers(self) -> set[int]:
        return {f.worker for f in self.futures.values()}

    def idle_workers(self) -> list[int]:
        busy = self.busy_workers()
        return [i for i in range(self.n) if i not in busy and i not in self.retired]

    def submit(self, worker: int, stage: str, flight: InFlight, *args) -> None:
        flight.stage, flight.worker = stage, worker
        ref = getattr(self.actors[worker], stage).remote(*args)
        self.futures[ref] = flight

    def wait(self, timeout_s: float) -> list[tuple[InFlight, dict[str, Any] | None, str | None]]:
        """Finished calls as (flight, result, error); a dead actor is replaced and reported as error."""
        if not self.futures:
            return []
        self.watch.check()
        try:
            done, _ = ray.wait(list(self.futures), num_returns=1, timeout=timeout_s)
            if done:   # collect everything else that is already finished too
                more, _ = ray.wait([f for f in self.futures if f not in done],
                                   num_returns=len(self.futures) - len(done), timeout=0)
                done = list(done) + list(more)
        except Exception as exc:  # noqa: BLE001 - the connection to the cluster itself failed
            raise ClusterLost(f"{type(exc).__name__}: {exc}") from None
        out = []
        for ref in done:
            flight = self.futures.pop(ref)
            try:
                out.append((flight, ray.get(ref), None))
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                out.append((flight, None, self._replace(flight, exc)))
            except ray.exceptions.RayTaskError as exc:
                out.append((flight, None, f"worker error during {flight.stage}: {exc.cause!r}"))
        return out

    def _replace(self, flight: InFlight, exc: BaseException) -> str:
        """Replace the dead actor of *flight* (or retire its slot); the failure reason to store."""
        index = flight.worker
        self.watch.require()          # a dead head makes the calls below wait for Ray's 60 s limit
        node_id, label = self.nodes.pop(index, ("", "unknown node"))
        node_gone = bool(node_id) and not _node_alive(node_id)
        if node_id and not node_gone and isinstance(exc, getattr(ray.exceptions, "ActorUnavailableError", ())):
            node_gone = _node_dies_soon(node_id)
        flight.extra["lost"] = node_gone
        try:
            ray.kill(self.actors[index])          # an unreachable actor must not come back as a twin
        except Exception:  # noqa: BLE001 - already gone
            pass
        self.replaced += 1
        live = self.n - len(self.retired)
        if live * self.num_cpus > cluster_cpus_or_zero() + 1e-9:
            self.retired.add(index)
            if len(self.retired) == self.n:
                raise ClusterLost(f"every worker is gone and the cluster has no room for new ones "
                                  f"({cluster_cpus_or_zero():g} CPUs left)")
        else:
            self.actors[index] = self._spawn(index)
            self._locating[self.actors[index].kf_node.remote()] = index
        where = f"node {label} left the cluster" if node_gone else f"on node {label}"
        return f"worker died during {flight.stage} ({where}): {type(exc).__name__}"

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


class ClusterLost(RuntimeError):
    """The driver lost its connection to Ray, or every worker is gone with no room for new ones."""


class GcsWatch:
    """Notices that the cluster's head (its GCS) is gone before Ray's own 60 s reconnect limit ends
    the process without a word: a TCP probe every ``every_s``, ClusterLost after ``grace_s`` down."""

    def __init__(self, *, every_s: float = 2.0, grace_s: float | None = None):
        if grace_s is None:
            grace_s = float(os.environ.get("KERNELFOUNDRY_HEAD_GRACE_S", "10"))
        self.every_s, self.grace_s = min(every_s, grace_s / 2), grace_s
        try:
            host, _, port = ray.get_runtime_context().gcs_address.rpartition(":")
            self.addr: tuple[str, int] | None = (host.strip("[]"), int(port))
        except Exception:  # noqa: BLE001 - no address to watch (an in-process test pool)
            self.addr = None
        self.last_check = time.time()
        self.down_since: float | None = None

    def check(self) -> None:
        """Probe at most every ``every_s``; raise ClusterLost once the head has been down ``grace_s``."""
        now = time.time()
        if self.addr is None or now - self.last_check < self.every_s:
            return
        self.last_check = now
        import socket
        try:
            socket.create_connection(self.addr, timeout=1.0).close()
            self.down_since = None
        except OSError as exc:
            self.down_since = self.down_since or now
            if now - self.down_since >= self.grace_s:
                raise ClusterLost(f"its head (GCS at {self.addr[0]}:{self.addr[1]}) has not answered for "
                                  f"{now - self.down_since:.0f} s ({exc.strerror or exc})") from None

    def require(self) -> None:
        """Return once the head answers; ClusterLost if it does not within ``grace_s``."""
        self.last_check = 0.0
        self.check()
        while self.down_since is not None:
            time.sleep(min(1.0, self.every_s))
            self.last_check = 0.0
            self.check()


#: How long an unreachable actor's node may still look alive before its death is known: Ray's
#: health checks declare a node dead only after several missed periods (seconds, longer under load).
UNREACHABLE_SETTLE_S = 10.0


def _node_dies_soon(node_id: str, settle_s: float = UNREACHABLE_SETTLE_S) -> bool:
    """Whether the node of an unreachable actor is declared dead within *settle_s* (so the failure
    is stored as the node leaving, not as a worker dying on a live node)."""
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        time.sleep(0.25)
        if not _node_alive(node_id):
            return True
    return False


def _node_alive(node_id: str) -> bool:
    try:
        return any(n.get("NodeID") == node_id and n.get("Alive") for n in ray.nodes())
    except Exception:  # noqa: BLE001 - cannot ask: assume the node is there
        return True


def cluster_cpus_or_zero() -> float:
    try:
        return float(ray.cluster_resources().get("CPU", 0.0))
    except Exception:  # noqa: BLE001
        return 0.0
