"""What one search run does with the memory: the driver's only entry point to it.

It reads priors when the run starts (operator bandit, prompt-variant credit, cold-start
seeds), writes one experience per stored candidate as results arrive (buffered, written
in one transaction at each summary write, every 2 s, and at the end: a killed driver
loses at most those seconds of experiences, never a candidate, which the run store
holds), and stores the run's elites when the run ends (or is interrupted).  A memory that fails mid-run (disk
full, a lock held too long) is reported once and switched off: the run itself goes on.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import random
import sqlite3
from pathlib import Path
from typing import Any, Callable

from .bandit import DUPLICATE_REWARD, OperatorBandit
from .task_signature import TaskSignature, signature_of
from .store import ExperienceStore
from .values import DRAFT, REFINE, child_gain, gain_of, reward_of, stage_of

#: experiences retrieved into an LLM prompt, and how many jobs a retrieval is reused for
PROMPT_EXPERIENCES = 3
RETRIEVAL_REUSE = 16
COLD_START_SEEDS = 3
#: of which at most this many from other tasks, one per task: an elite of another task (same op
#: kind, same launch) often computes something else and fails correctness, a wasted candidate
CROSS_TASK_SEEDS = 2
MEMORY_SEED_PREFIX = "memory:"
ELITES_KEPT = 8
#: prompt-variant credit taken from the memory counts as at most this many uses
PROMPT_PRIOR_CAP = 5
#: the prompt pool's credit for a fixed kernel (metaprompt.PromptPool's default fix_credit)
PROMPT_FIX_CREDIT = 0.5
#: buffered experiences are written at least this often (and at every summary write)
FLUSH_AT = 64


def launch_inputs(source: str) -> int | None:
    """How many positional inputs the module's ``launch`` takes (None if it has none)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "launch":
            return len(node.args.posonlyargs) + len(node.args.args)
    return None


def is_memory_seed(job_or_description: dict[str, Any] | str | None) -> bool:
    """Whether a seed job (or a stored seed's description) is a cold-start seed from the memory."""
    if isinstance(job_or_description, dict):
        return job_or_description.get("kind") == "seed" and str(job_or_description.get("name", "")).startswith(
            MEMORY_SEED_PREFIX)
    return str(job_or_description or "").startswith(f"seed {MEMORY_SEED_PREFIX}")


def prompt_key(sections: dict[str, str] | None) -> str | None:
    """A prompt variant's identity across runs: a hash of its sections."""
    if not sections:
        return None
    text = "\n".join(f"{k}\n{v}" for k, v in sorted(sections.items()))
    return "prompt:" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


class RunMemory:
    """The memory as one run sees it (see module docstring)."""

    def __init__(self, store: ExperienceStore | None, sig: TaskSignature, run: str = "", *, read: bool = True,
                 write: bool = True, builtin_operators: dict[str, tuple[str, float]] | None = None,
                 log: Callable[[str], None] = print):
        """*store* None: no memory file (--no-memory); the operator bandit still learns from this run."""
        self.store, self.sig, self.run = store, sig, run
        self.read, self.write, self.log = read and store is not None, write and store is not None, log
        self.written = 0
        self._pending: list[tuple[dict[str, Any], list[str]]] = []
        self.cold_start: list[str] = []
        self._retrieved: dict[int, tuple[int, list[dict[str, Any]]]] = {}
        self._failed: set[str] = set()
        self.priors = {stage: store.priors(sig, stage) if self.read else {} for stage in (DRAFT, REFINE)}
        self.bandit = OperatorBandit(builtin_operators, self.priors) if builtin_operators else None

    @classmethod
    def open(cls, path: str | Path | None, task, hardware: list[str], *, read: bool = True, write: bool = True,
             builtin_operators: dict[str, tuple[str, float]] | None = None,
             log: Callable[[str], None] = print) -> "RunMemory":
        """The memory for a run of *task* (*path* None: none, only the bandit); set ``run`` (the run
        directory) before recording.  *builtin_operators* (name -> (kind, weight), given by the caller
        from the built-in mutator's operators) switches the operator bandit on."""
        ops = builtin_operators
        store = ExperienceStore(path) if path is not None else None
        try:
            return cls(store, signature_of(task, hardware), read=read, write=write, builtin_operators=ops, log=log)
        except BaseException:
            if store is not None:
                store.close()
            raise

    def close(self) -> None:
        self.flush()
        if self.store is not None:
            self.store.close()

    # -- before the search ------------------------------------------------------------
    def cold_start_seeds(self, task, known_sources: set[str]) -> list[tuple[str, str]]:
        """Elites of the most similar tasks whose launch fits *task*, as (name, source) seeds."""
        if not self.read:
            return []
        out, other_tasks = [], set()
        for e in self.store.best_elites(self.sig, len(task.inputs), k=4 * COLD_START_SEEDS + len(known_sources)):
            if e["source"] in known_sources or launch_inputs(e["source"]) != len(task.inputs):
                continue
            if e["task"] != task.name:
                if e["task"] in other_tasks or len(other_tasks) >= CROSS_TASK_SEEDS:
                    continue
                other_tasks.add(e["task"])
            out.append((f"{MEMORY_SEED_PREFIX}{e['task']}#{e['candidate_id']} (objective {e['objective']:.3f}, "
                        f"similarity {e['similarity']:.2f})", e["source"]))
            if len(out) == COLD_START_SEEDS:
                break
        self.cold_start = [name for name, _ in out]
        return out

    def prime_prompts(self, pool) -> int:
        """Start each prompt variant's credit from its value in the memory; returns how many were primed."""
        if not self.read or pool is None:
            return 0
        primed = 0
        for v in pool.variants.values():
            key = prompt_key(v.get("sections"))
            prior = self.priors[REFINE].get(key) if key else None
            if prior is None or prior.n <= 0 or v["credited"]:
                continue
            n = max(1, int(round(min(prior.n, PROMPT_PRIOR_CAP))))
            v["credited"] += n
            v["credit_sum"] += n * prior.mean
            primed += 1
        return primed

    # -- per job ----------------------------------------------------------------------
    def job_extras(self, job: dict[str, Any], tried: frozenset[str] = frozenset()) -> dict[str, Any]:
        """What the memory adds to a job: the operator order (built-in) or experiences (LLM)."""
        parent = job.get("parent") or {}
        stage = stage_of(parent.get("passed"), job["kind"])
        extras: dict[str, Any] = {}
        if self.bandit is not None:
            rng = random.Random(f"memory:{job['seed']}")
            extras["operator_order"] = self.bandit.order(job["kind"], stage, rng, tried)
        elif self.read:                      # an LLM run: valued edits of similar tasks for the prompt
            extras["experiences"] = self._experiences(stage)
        return extras

    def _experiences(self, stage: int) -> list[dict[str, Any]]:
        uses, found = self._retrieved.get(stage, (RETRIEVAL_REUSE, []))
        if uses >= RETRIEVAL_REUSE:
            try:
                found = self.store.top_experiences(self.sig, stage, PROMPT_EXPERIENCES)
            except sqlite3.Error as exc:
                self._fail("read", exc)
                found = []
            uses = 0
        self._retrieved[stage] = (uses + 1, found)
        return found

    # -- per stored candidate ---------------------------------------------------------
    def record(self, job: dict[str, Any], row: dict[str, Any]) -> None:
        """One experience for a stored candidate; updates the bandit and the memory's values."""
        parent = job.get("parent") or {}
        kind = job["kind"]
        child_obj = row.get("objective") if row["passed"] else None
        mutator = row.get("mutator") or "unknown"
        if kind == "seed":
            mutator = "memory-seed" if is_memory_seed(job) else "seed"
        stage, reward = self.replay(kind, parent.get("passed"), parent.get("objective"), row["passed"], child_obj,
                                    mutator)
        if not self.write:
            return
        pkey = prompt_key((job.get("prompt") or {}).get("sections"))
        actions: list = [mutator]
        if pkey:                 # a prompt variant is valued on the prompt pool's own credit scale
            actions.append((pkey, child_gain(parent.get("objective"), child_obj, PROMPT_FIX_CREDIT)))
        diff = ""
        if parent.get("source") and row.get("source"):
            diff = "".join(difflib.unified_diff(parent["source"].splitlines(True), row["source"].splitlines(True),
                                                "parent", "child", n=2))
        exp = {"run": self.run, "stage": stage, "action": mutator, "request_kind": kind, "prompt_key": pkey,
               "parent_id": parent.get("id"), "parent_cell": parent.get("cell"),
               "parent_objective": parent.get("objective"), "parent_passed": parent.get("passed") if parent else None,
               "candidate_id": row.get("id"), "gate": row.get("gate"), "passed": row["passed"],
               "objective": child_obj, "gain": gain_of(parent.get("objective"), child_obj), "reward": reward,
               "description": row.get("description"), "diff": diff}
        self._pending.append((exp, actions))
        if len(self._pending) >= FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        """Write the buffered experiences (one transaction)."""
        if not self._pending or not self.write:
            self._pending.clear()
            return
        batch, self._pending = self._pending, []
        try:
            self.store.add_experiences(self.sig, batch)
            self.written += len(batch)
        except sqlite3.Error as exc:
            self._fail("write", exc)

    def replay(self, kind: str, parent_passed: bool | None, parent_objective: float | None, passed: bool,
               objective: float | None, mutator: str | None) -> tuple[int, float]:
        """The bandit learns one candidate (a built-in operator's): :meth:`record` calls it for each new
        candidate, a resumed run for each stored one (its experience was written then), so a resume goes on
        with what the run had learned.  Returns the candidate's (stage, reward)."""
        stage = stage_of(parent_passed, kind)
        reward = reward_of(stage, passed, parent_objective, objective if passed else None)
        if self.bandit is not None and mutator and mutator.startswith("builtin:"):
            self.bandit.update(stage, mutator.split(":", 1)[1], reward)
        return stage, reward

    def note_duplicate(self, job: dict[str, Any], mutator: str | None) -> None:
        """A proposal that duplicated a stored candidate: a small penalty for its operator."""
        if self.bandit is not None and mutator and mutator.startswith("builtin:"):
            parent = job.get("parent") or {}
            self.bandit.update(stage_of(parent.get("passed"), job["kind"]), mutator.split(":", 1)[1], DUPLICATE_REWARD)

    # -- at the end -------------------------------------------------------------------
    def record_elites(self, archive) -> None:
        self.flush()
        if not self.write:
            return
        elites = sorted(archive.elites(), key=lambda e: -e.objective)[:ELITES_KEPT]
        rows = [{"candidate_id": e.candidate_id, "objective": e.objective, "cell": list(e.cell),
                 "n_inputs": launch_inputs(e.source) or 0, "source": e.source} for e in elites]
        try:
            self.store.record_elites(self.run, self.sig, rows)
        except sqlite3.Error as exc:
            self._fail("write", exc)

    def summary(self) -> dict[str, Any]:
        self.flush()
        out: dict[str, Any] = {"path": None if self.store is None else str(self.store.path), "read": self.read, "write": self.write,
                               "signature": self.sig.to_dict(), "experiences_written": self.written,
                               "cold_start_seeds": self.cold_start,
                               "priors": {("draft" if s == DRAFT else "refine"): len(p) for s, p in self.priors.items()}}
        if self.bandit is not None:
            out["operators"] = self.bandit.summary()
        return out

    def _fail(self, what: str, exc: Exception) -> None:
        if what == "write":
            self.write = False
        if what in self._failed:
            return
        self._failed.add(what)
        self.log(f"memory {self.store.path}: {what} failed ({exc}); the run goes on without memory {what}s.")
