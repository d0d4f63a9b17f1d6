"""The asynchronous steady-state driver: K jobs always in flight, no generation barrier.

The driver owns the archive and the run store; workers propose and verify.
Every finished candidate is committed to the store before anything else
happens, so ``kill -9`` loses only the jobs in flight, and ``--resume``
rebuilds the archive, the counters and the prompt pool from the store.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import UserError
from ..records import is_inconclusive
from ..memory import is_memory_seed
from ..mutate import ParentView
from ..store import RunStore
from ..task import Task
from .archive import NEW_CELL, KernelArchive
from .drafts import DraftPhase
from .progress import ProgressLine
from .rundir import SUMMARY_NAME
from .selection import Choice, SelectionState, Selector
from .stats import RunStats, write_json_atomic
from .workers import InFlight, WorkerPool

MAX_CONSECUTIVE_DUPLICATES = 200


@dataclass
class SearchSettings:
    """What the driver needs besides the task (mirrors the evolve command's options)."""

    budget: int
    workers: int
    seed: int
    hardware: list[str]
    strategy: str = "map-elites"
    max_cost: float | None = None
    max_llm_seconds: float | None = None   # stop proposing once the LLM calls took this long (sim: virtual)
    summary_every_s: float = 2.0
    stop: Any = None                  # a threading.Event: set, the run stops as if interrupted (bench)


class SearchDriver:
    """Runs one search to its budget; see module docstring."""

    def __init__(self, *, task: Task, settings: SearchSettings, store: RunStore, run_dir: Path,
                 pool: WorkerPool, progress: ProgressLine, prompt_pool=None, llm_client=None,
                 archive: KernelArchive | None = None, log: Callable[[str], None] | None = None, memory=None,
                 routing=None):
        self.task, self.settings, self.store, self.run_dir = task, settings, store, run_dir
        self.pool, self.progress = pool, progress
        self.prompt_pool, self.llm_client = prompt_pool, llm_client
        self.archive = archive or KernelArchive(seed=settings.seed)
        self.log = log or progress.message
        self.memory = memory                                # kernelfoundry.memory.RunMemory, or None
        self.routing = routing                              # search.routing.RoutingHook (LLM runs), or None
        self.tried: dict[int, set[str]] = {}                # parent id -> built-in operators applied to it
        self.stats = RunStats.from_store(store)
        self.state = SelectionState()
        self.views: dict[int, ParentView] = {}          # passed candidates and recent failures
        self.hashes: set[str] = set()
        self.job_counter = int(store.get_meta("jobs_issued", 0))
        self.selector = Selector(settings.strategy, seed=settings.seed * 7919 + self.job_counter,
                                 p_fix=0.1)
        self.consecutive_duplicates = 0
        self.retry: list[InFlight] = []                 # jobs whose node left the cluster, to run again
        self._error_band: Any = None                    # the model's error band for the task (summary)
        self.stop_reason: str | None = None
        self.last_summary = 0.0
        self._rebuild_from_store()
        # a task without a seed: an LLM drafts its first kernel (search/drafts.py)
        self.drafts = DraftPhase(self) if task.no_seed_reason else None

    # -- resume -----------------------------------------------------------
    def _rebuild_from_store(self) -> None:
        from ..candidate import source_hash
        outcomes: dict[int, tuple[bool, float | None]] = {}      # stored id -> (passed, objective)
        for row in self.store.iter_candidates():
            if row.source:
                self.hashes.add(source_hash(row.source))
            self._note_tried(row.parent_ids, row.mutator)
            outcomes[row.id] = (bool(row.passed), row.objective)
            if self.memory is not None and row.parent_ids:       # the operator bandit learns it again
                parent_passed, parent_objective = outcomes.get(row.parent_ids[0], (None, None))
                self.memory.replay(row.kind, parent_passed, parent_objective, bool(row.passed), row.objective,
                                   row.mutator)
            if (row.mutator == "seed" or row.kind == "draft") and row.passed:
                self.state.seed_ids.append(row.id)
            # a memory seed that failed is another task's kernel: nothing to repair
            foreign = row.kind == "seed" and is_memory_seed(row.description)
            self.state.note(row.id, row.passed, row.objective, None if foreign else row.gate)
            if row.passed and row.descriptors:
                self.archive.add(row.id, row.source, row.objective, row.descriptors)
                self.views[row.id] = self._view(row.id, row.source, row.passed, row.gate, row.reason,
                                                row.objective, row.descriptors, row.hardware)
            elif row.source and row.gate in ("correctness", "trace", "load") and not foreign:
                self.views[row.id] = self._view(row.id, row.source, row.passed, row.gate, row.reason,
                                                None, None, {})

    # -- main entry -------------------------------------------------------
    def run(self, seeds: list[tuple[str, str]]) -> dict[str, Any]:
        """Evaluate *seeds* (name, source) not stored yet, then search to the budget.

        The summary says ``finished`` only after a normal end: an interrupted or failed
        session leaves ``finished: false`` (its candidates are stored; ``--resume`` goes on).
        """
        seen = self.store.sources_seen()
        pending = [(name, src) for name, src in seeds if src not in seen]
        try:
            if pending or not self.state.seed_ids:
                self._evaluate_seeds(pending, required=self.drafts is None)
            if self.drafts is not None and not self.state.seed_ids:
                self.drafts.run(seeds)            # raises DraftsFailed when no draft passes
            self._steady_state()
        except BaseException:
            self._remember_elites()
            self.write_summary(final=False)
            raise
        else:
            self._remember_elites()
        finally:
            self.progress.close()
        return self.write_summary(final=True)

    def _evaluate_seeds(self, seeds: list[tuple[str, str]], *, required: bool = True) -> None:
        """Verify *seeds*; unless one passes, raise (when *required*: a task without a seed drafts one)."""
        failures, misfits = [], []
        queue = list(seeds)
        while queue or self.pool.futures or self.retry:
            self._check_stop()
            for w in self.pool.idle_workers():
                if self.retry:
                    self._resubmit(w)
                    continue
                if not queue:
                    break
                name, source = queue.pop(0)
                job = {"kind": "seed", "source": source, "description": f"seed {name}",
                       "seed": self._next_job_seed(), "name": name}
                self.pool.submit(w, "propose", InFlight(job=job, stage="propose", worker=w, started=time.time()),
                                 job)
            for flight, result, err in self.pool.wait(0.5):
                cid = self._handle(flight, result, err)
                if cid is not None:
                    row = self.store.get_candidate(cid)
                    if row.passed:
                        self.state.seed_ids.append(cid)
                    elif is_memory_seed(flight.job):
                        misfits.append(f"{flight.job['name'].split(' ')[0]} (gate '{row.gate}')")
                    else:
                        failures.append(f"{flight.job['name']}: gate '{row.gate}': {row.reason}")
        if failures:
            self.log("seed kernel(s) failed the verifier:\n  " + "\n  ".join(failures))
        if misfits:
            self.log(f"{len(misfits)} seed(s) from the memory did not fit this task: {', '.join(misfits)}")
        if not self.state.seed_ids and required:
            if not seeds:                          # a resumed run: its seeds were stored and failed before
                failures = [f"{r.description or 'seed'}: gate '{r.gate}': {r.reason}"
                            for r in self.store.iter_candidates() if r.kind == "seed" and not r.passed]
            raise UserError("no seed kernel of task '" + self.task.name + "' passes the verifier, so the "
                            "search has nothing to start from. " + " ".join(failures)
                            + f" Check each seed with `python -m kernelfoundry.verify "
                            f"{self.task.path or 'TASK.yaml'} SEED.py`.")

    def _steady_state(self) -> None:
        budget = self.settings.budget
        while True:
            self._check_stop()
            stop_new = self.stats.n_candidates + len(self.pool.futures) >= budget or self._cost_exhausted() \
                or self.consecutive_duplicates >= MAX_CONSECUTIVE_DUPLICATES
            if not stop_new:
                for w in self.pool.idle_workers():
                    if self.stats.n_candidates + len(self.pool.futures) >= budget:
                        break
                    if self.retry:
                        self._resubmit(w)
                    else:
                        self._submit_new_job(w)
            if not self.pool.futures:
                break
            for flight, result, err in self.pool.wait(0.5):
                self._handle(flight, result, err)
            self._maybe_evolve_prompts()
            self._tick()
        if self.consecutive_duplicates >= MAX_CONSECUTIVE_DUPLICATES:
            self.stop_reason = (f"the last {MAX_CONSECUTIVE_DUPLICATES} proposals were all duplicates of stored "
                                f"candidates: the mutator has run out of new edits for this task")
        elif self._cost_exhausted():
            self.stop_reason = (f"LLM cost ${self.stats.cost_usd:.4f} reached --max-cost "
                                f"${self.settings.max_cost:.4f}" if self._over(self.stats.cost_usd, self.settings.max_cost)
                                else f"LLM time {self.stats.llm_seconds:.1f} s reached --max-llm-seconds "
                                     f"{self.settings.max_llm_seconds:g}")
        if self.stop_reason:
            self.log(f"stopping early at {self.stats.n_candidates} of {budget} candidates: {self.stop_reason}.")

    def _check_stop(self) -> None:
        if self.settings.stop is not None and self.settings.stop.is_set():
            raise KeyboardInterrupt

    def _cost_exhausted(self) -> bool:
        """--max-cost or --max-llm-seconds reached."""
        return self._over(self.stats.cost_usd, self.settings.max_cost) or \
            self._over(self.stats.llm_seconds, self.settings.max_llm_seconds)

    @staticmethod
    def _over(spent: float, limit: float | None) -> bool:
        return limit is not None and spent >= limit

    # -- jobs -------------------------------------------------------------
    def _next_job_seed(self) -> int:
        self.job_counter += 1
        return (self.settings.seed * 1_000_003 + self.job_counter) % (2**31 - 1)

    def _submit_new_job(self, worker: int) -> None:
        choice: Choice = self.selector.choose(self.archive, self.state)
        parent = self.views.get(choice.parent_id)
        if parent is None:
            parent = self._view_from_store(choice.parent_id)
        job = {"kind": choice.kind, "seed": self._next_job_seed(), "parent": parent.to_dict(),
               "inspirations": [self._view_of(i).to_dict() for i in choice.inspiration_ids],
               "target_cell": choice.target_cell, "selection": choice.reason}
        if self.prompt_pool is not None:
            job["prompt"] = self.prompt_pool.sample()
        if self.memory is not None:
            job.update(self.memory.job_extras(job, frozenset(self.tried.get(parent.id, ()))))
        if self.routing is not None:
            self.routing.route(job, spent_usd=self.stats.cost_usd, spent_seconds=self.stats.llm_seconds,
                               slots_left=self.settings.budget - self.stats.n_candidates - len(self.pool.futures))
        self.pool.submit(worker, "propose", InFlight(job=job, stage="propose", worker=worker, started=time.time()),
                         job)

    def _resubmit(self, worker: int) -> None:
        """Run a job lost with its node again, from the stage it was lost at (a verify keeps its proposal)."""
        flight = self.retry.pop(0)
        flight.attempt, flight.started = flight.attempt + 1, time.time()
        args = (flight.proposal["source"],) if flight.stage == "verify" else (flight.job,)
        self.pool.submit(worker, flight.stage, flight, *args)

    def _lost(self, flight: InFlight, proposal, reason: str) -> int:
        """A call that failed because its worker died: stored as failed; re-issued once if its node left."""
        cid = self._record_failure(flight.job, proposal, "worker", reason, flight)
        if flight.extra.pop("lost", False) and flight.attempt == 1:
            self.retry.append(flight)
        return cid

    def _note_tried(self, parent_ids, mutator: str | None) -> None:
        if parent_ids and mutator and mutator.startswith("builtin:"):
            self.tried.setdefault(int(parent_ids[0]), set()).add(mutator.split(":", 1)[1])

    def _view_of(self, cid: int) -> ParentView:
        return self.views.get(cid) or self._view_from_store(cid)

    def _view_from_store(self, cid: int) -> ParentView:
        row = self.store.get_candidate(cid)
        return self._view(row.id, row.source, row.passed, row.gate, row.reason, row.objective,
                          row.descriptors, row.hardware)

    def _view(self, cid, source, passed, gate, reason, objective, descriptors, hardware, cell=None) -> ParentView:
        if cell is None and descriptors:
            cell = list(self.archive.cell_of(descriptors))
        return ParentView(id=cid, source=source or "", objective=objective, descriptors=descriptors,
                          cell=cell, passed=passed, gate=gate, feedback=reason or "", hardware=hardware or {})

    # -- results ----------------------------------------------------------
    def _handle(self, flight: InFlight, result: dict | None, err: str | None) -> int | None:
        """Process one finished call; returns the stored candidate id, if one was stored."""
        self.stats.workers_replaced = self.pool.replaced
        job = flight.job
        if flight.stage == "propose":
            if err is not None:
                return self._lost(flight, None, err)
            if result["source"] is None:
                return self._record_failure(job, result, "mutate", result.get("error") or "no source", flight)
            self._note_tried(result.get("parent_ids"), result.get("mutator"))
            if result["hash"] in self.hashes:
                if self.memory is not None:
                    self.memory.note_duplicate(job, result.get("mutator"))
                if self.routing is not None:
                    self.routing.observe(job, result, None)
                if result.get("parent_ids"):
                    self.state.note_duplicate(int(result["parent_ids"][0]))
                self.consecutive_duplicates += 1
                self.stats.duplicates += 1
                self.stats.add_usage(result.get("usage"))
                if result.get("llm_log"):
                    self.store.add_llm_calls(None, result["llm_log"])
                return None
            self.consecutive_duplicates = 0
            self.hashes.add(result["hash"])
            flight.proposal = result
            self.pool.submit(flight.worker, "verify", flight, result["source"])
            return None
        if err is not None:
            return self._lost(flight, flight.proposal, err)
        return self._record_verified(job, flight.proposal, result, flight)

    def _base_row(self, job: dict, proposal: dict | None, flight: InFlight) -> dict[str, Any]:
        proposal = proposal or {}
        usage = proposal.get("usage") or {}
        return {
            "id": self.store.next_candidate_id(),
            "created_at": time.time(),
            "parent_ids": list(proposal.get("parent_ids") or ([job["parent"]["id"]] if "parent" in job else [])),
            "mutator": proposal.get("mutator") or ("seed" if job["kind"] == "seed" else "unknown"),
            "kind": job["kind"],
            "description": proposal.get("description") or job.get("description", ""),
            "prompt_id": None if proposal.get("prompt_id") is None else str(proposal.get("prompt_id")),
            "source": proposal.get("source"),
            "llm_calls": int(usage.get("calls", 0)), "prompt_tokens": int(usage.get("prompt_tokens", 0)),
            "completion_tokens": int(usage.get("completion_tokens", 0)),
            "cost_usd": float(usage.get("cost_usd", 0.0)),
            "worker": proposal.get("worker"), "job_seed": job["seed"],
            "seconds": time.time() - flight.started,
        }

    def _record_failure(self, job, proposal, gate: str, reason: str, flight: InFlight) -> int:
        row = self._base_row(job, proposal, flight)
        row.update(passed=False, gate=gate, reason=reason, gates=[{"name": gate, "passed": False, "reason": reason}],
                   hardware={}, archive_status=0, verify_seconds=0.0)
        return self._store(row, (proposal or {}).get("llm_log"), job, proposal, objective=None)

    def _record_verified(self, job, proposal, verdict: dict, flight: InFlight) -> int:
        row = self._base_row(job, proposal, flight)
        passed = bool(verdict["passed"])
        objective = verdict.get("objective")
        if objective is not None and not math.isfinite(objective):
            objective = None
        descriptors = verdict.get("descriptors")
        status, cell = 0, None
        if passed and descriptors and objective is not None:
            cell = list(self.archive.cell_of(descriptors))
            status = self.archive.add(row["id"], row["source"], objective, descriptors)
        gates = verdict.get("gates", [])
        if verdict.get("cached"):               # another run's verification: its seconds were not spent here
            gates = [{**g, "cached": True} for g in gates]
        row.update(passed=passed, gate=verdict.get("gate"), reason=verdict.get("reason", ""),
                   gates=gates, param_space=verdict.get("param_space"),
                   descriptors=descriptors, cell=cell, objective=objective,
                   hardware=verdict.get("hardware", {}), archive_status=status,
                   verify_seconds=float(verdict.get("seconds", 0.0)))
        if verdict.get("measured") is not None:        # a device measured it: objective is the measured one
            row.update(measured=verdict["measured"], predicted_objective=verdict.get("predicted_objective"))
        if verdict.get("cached"):
            self.stats.verdicts_cached += 1
        cid = self._store(row, proposal.get("llm_log"), job, proposal, objective=objective)
        if status == NEW_CELL:
            self.log(f"  new cell {tuple(cell)} ({self.archive.spec.describe_cell(tuple(cell))}): candidate {cid}, "
                     f"objective {objective:.3f} via {row['mutator']}")
        return cid

    def _store(self, row: dict, llm_log, job: dict, proposal: dict | None, *, objective) -> int:
        if self.routing is not None:            # learns, and adds its decision to the call's log record
            self.routing.observe(job, proposal, row)
        cid = self.store.add_candidate(row, llm_log)
        self.stats.note(cid=cid, passed=row["passed"], gate=row["gate"], objective=objective,
                        mutator=row["mutator"], usage=(proposal or {}).get("usage"), gates=row.get("gates"))
        foreign = is_memory_seed(job)      # a failed memory seed is another task's kernel: not repairable
        # the verifier's own limit ended it: no fault to repair, nothing to charge the operator or prompt with
        unjudged = is_inconclusive({"passed": row["passed"], "gates": row.get("gates") or []})
        self.state.note(cid, row["passed"], objective, None if foreign or unjudged else row["gate"])
        if row["source"] and not unjudged and (row["passed"] or (row["gate"] in ("correctness", "trace", "load")
                                                                 and not foreign)):
            self.views[cid] = self._view(cid, row["source"], row["passed"], row["gate"], row["reason"],
                                         objective, row.get("descriptors"), row.get("hardware"), row.get("cell"))
        if unjudged:
            self.log(f"  candidate {cid}: {row['reason'][:200]}")
            return cid
        if self.memory is not None:
            self.memory.record(job, row)
        if self.prompt_pool is not None and job.get("prompt"):
            parent_obj = job["parent"].get("objective") if "parent" in job else None
            self.prompt_pool.credit(job["prompt"]["id"], parent_obj, objective if row["passed"] else None)
        return cid

    def _remember_elites(self) -> None:
        if self.memory is not None:
            self.memory.record_elites(self.archive)

    # -- prompts, summary, progress ---------------------------------------
    def _maybe_evolve_prompts(self) -> None:
        if self.prompt_pool is None or self.llm_client is None or self._cost_exhausted():
            return
        variant_id = self.prompt_pool.due_for_evolution()
        if variant_id is None:
            return
        feedback = [v.to_dict() for v in list(self.views.values())[-8:]]
        new = self.prompt_pool.evolve(variant_id, feedback, self.llm_client, task=self.task)
        log = getattr(self.prompt_pool, "drain_llm_log", lambda: [])()
        if log:
            self.store.add_llm_calls(None, log, purpose="prompt-evolution")
            for rec in log:
                self.stats.add_usage({"calls": 1, "prompt_tokens": rec.get("prompt_tokens", 0),
                                      "completion_tokens": rec.get("completion_tokens", 0),
                                      "cost_usd": rec.get("cost_usd", 0.0), "latency_s": rec.get("latency_s", 0.0)})
        self.store.save_prompts(self.prompt_pool.to_records())
        if new is not None:
            self.log(f"  prompt variant {new['id']} evolved from {variant_id} ({new.get('origin')})")

    def _tick(self) -> None:
        self.progress.update(n=self.stats.n_candidates, correct=self.stats.n_correct,
                             best=self.stats.best_objective, coverage=self.archive.coverage,
                             cost=self.stats.cost_usd, in_flight=len(self.pool.futures),
                             nodes=self._workers_per_node() if self.progress.due() else None)
        if time.time() - self.last_summary >= self.settings.summary_every_s:
            self.write_summary()

    def write_summary(self, *, final: bool = False) -> dict[str, Any]:
        extra: dict[str, Any] = {"finished": final, "stop_reason": self.stop_reason}
        if self.prompt_pool is not None:
            extra["prompts"] = self.prompt_pool.summary()
            self.store.save_prompts(self.prompt_pool.to_records())
        if self._error_band is None:                  # constant for the run; the first costs seconds (imports)
            self._error_band = _model_error(self.task, list(self.settings.hardware))
        extra["model_error"] = self._error_band
        if self.memory is not None:
            extra["memory"] = self.memory.summary()
        if self.routing is not None:
            extra["routing"] = self.routing.summary()
        if self.drafts is not None:
            extra["drafts"] = self.drafts.summary()
        extra["workers_per_node"] = self._workers_per_node()
        summary = self.stats.summary(task=self.task.name, archive=self.archive, hardware=self.settings.hardware,
                                     budget=self.settings.budget, extra=extra)
        self.store.set_meta("jobs_issued", self.job_counter)
        self.store.set_meta("duplicates", self.stats.duplicates)
        self.store.set_meta("verdicts_cached", self.stats.verdicts_cached)
        self.store.set_meta("wall_seconds", self.stats.wall_seconds)
        self.stats.wall_seconds_before, self.stats.started = self.stats.wall_seconds, time.time()
        write_json_atomic(self.run_dir / SUMMARY_NAME, summary)
        self.last_summary = time.time()
        return summary


    def _workers_per_node(self) -> dict[str, int]:
        per_node = getattr(self.pool, "workers_per_node", None)     # in-process test pools have no nodes
        return per_node() if per_node is not None else {}


def _model_error(task, hardware: list[str]) -> dict | None:
    """Objectives are predictions: the model's measured error band per hardware (docs/fidelity.md)."""
    try:
        from ..fidelity import model_error_summary
        return model_error_summary(task, hardware)
    except Exception:  # noqa: BLE001 - the summary must not fail over an annotation
        return None
