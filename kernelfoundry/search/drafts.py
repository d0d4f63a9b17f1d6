"""Drafts: an LLM writes the first kernel of a task that has no seed (docs/llm.md, "Drafts").

A KernelBench problem whose ops the seed generator cannot lower (or a task file with
``seeds: []``) is run with an LLM.  Before the search, the driver asks for drafts, one at a
time: each draft job carries the closest example kernel the run knows (a memory elite of a
similar task, else the project's seed of the most similar task in ``experiments/tasks/``)
and the verifier's verdicts (gate and reason) on the earlier drafts, so the next one fixes
them.  Drafts are verified and stored like any candidate (``kind = 'draft'``) and count
toward the budget.  The first draft that passes becomes the search's seed; a run whose
drafts all fail (at most ``max(3, budget // 4)``, never more than the budget) ends with
:class:`DraftsFailed`, naming the last reasons.  A resumed run counts its stored drafts.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .. import REPO_DIR
from ..errors import UserError
from ..memory import MEMORY_SEED_PREFIX
from ..mutate import MAX_DRAFT_FAILURES, example_entry
from .workers import InFlight

#: at least this many drafts (budget allowing), else a quarter of the budget
MIN_DRAFTS = 3
#: the project's tasks whose seeds may serve as the draft prompt's example
PROJECT_TASKS = REPO_DIR / "experiments" / "tasks"
#: the example when no project task shares the task's op kind: the plainest complete module
FALLBACK_EXAMPLE = "relu"


class DraftsFailed(UserError):
    """Every draft of a task without a seed failed the verifier (or the budget ran out first)."""


def max_drafts(budget: int) -> int:
    """How many drafts a run with *budget* candidates asks for at most."""
    return max(1, min(budget, max(MIN_DRAFTS, budget // 4)))


class DraftPhase:
    """The drafting stage of one :class:`~kernelfoundry.search.loop.SearchDriver` (see module docs)."""

    def __init__(self, driver) -> None:
        self.d = driver
        self.max = max_drafts(driver.settings.budget)
        self.stored: list[dict[str, Any]] = []         # stored drafts, in order: n, id, gate, reason, source
        self.notes: list[dict[str, Any]] = []          # failures the prompt reports (stored and duplicates)
        self.passed_id: int | None = None
        self.example: dict[str, str] | None = None
        for row in driver.store.iter_candidates():     # a resumed run: its drafts so far
            if row.kind == "draft":
                self._note(len(self.stored) + 1, row.id, row.passed, row.gate, row.reason, row.source)
        self.asked = len(self.stored)

    # -- the phase ---------------------------------------------------------
    def run(self, seeds: list[tuple[str, str]]) -> None:
        """Ask for drafts until one passes; raises :class:`DraftsFailed` when none does."""
        d = self.d
        if self.passed_id is not None:
            return
        if self.example is None:
            self.example = choose_example(d.task, list(d.settings.hardware), seeds, d.memory)
        d.log(f"task {d.task.name} has no seed kernel ({d.task.no_seed_reason}): the LLM drafts one, at most "
              f"{self.max} drafts ({self.asked} so far); example kernel: {self.example['name']}")
        while self.passed_id is None:
            d._check_stop()
            if not d.pool.futures:
                if d.retry:                       # a draft lost with its node: asked again, not counted twice
                    idle = d.pool.idle_workers()
                    if idle:
                        d._resubmit(idle[0])
                else:
                    why = self._exhausted()
                    if why:
                        raise DraftsFailed(self._failure_message(why))
                    if not self._submit():
                        time.sleep(0.5)           # no worker free (replacements starting)
            for flight, result, err in d.pool.wait(0.5):
                cid = d._handle(flight, result, err)
                if cid is not None:
                    row = d.store.get_candidate(cid)
                    self._note(flight.job["draft"]["n"], cid, row.passed, row.gate, row.reason, row.source)
                    if row.passed:
                        d.state.seed_ids.append(cid)
                        score = "unscored" if row.objective is None else f"objective {row.objective:.3f}"
                        d.log(f"draft {flight.job['draft']['n']} (candidate {cid}) passed the verifier ({score}): "
                              "the search goes on from it")
                    else:
                        d.log(f"draft {flight.job['draft']['n']} (candidate {cid}) failed at the {row.gate} gate")
                elif not any(f is flight for f in (*d.pool.futures.values(), *d.retry)):
                    n = flight.job["draft"]["n"]        # not verified again: a word-for-word repeat
                    self.notes.append({"n": n, "id": None, "gate": "duplicate",
                                       "reason": "the module repeats an earlier draft word for word"})
                    d.log(f"draft {n} repeats an earlier draft")
            d._tick()

    def _submit(self) -> bool:
        """Ask an idle worker for the next draft; False when none is idle."""
        d = self.d
        idle = d.pool.idle_workers()
        if not idle:
            return False
        self.asked += 1
        failed = [s for s in self.stored if not s["passed"] and s["source"]]
        previous = ({"n": failed[-1]["n"], "id": failed[-1]["id"], "source": failed[-1]["source"]}
                    if failed else None)
        draft = {"n": self.asked, "max": self.max, "example": self.example,
                 "failures": [dict(f) for f in self.notes[-MAX_DRAFT_FAILURES:]], "previous": previous}
        job = {"kind": "draft", "seed": d._next_job_seed(), "description": f"draft {self.asked}", "draft": draft}
        d.pool.submit(idle[0], "propose", InFlight(job=job, stage="propose", worker=idle[0], started=time.time()),
                      job)
        return True

    def _note(self, n: int, cid: int, passed: bool, gate: str | None, reason: str | None, source: str | None) -> None:
        self.stored.append({"n": n, "id": cid, "passed": bool(passed), "source": source})
        if passed:
            self.passed_id = cid if self.passed_id is None else self.passed_id
        else:
            self.notes.append({"n": n, "id": cid, "gate": gate or "unknown", "reason": (reason or "").strip()})

    def _exhausted(self) -> str | None:
        """Why no further draft may be asked for, or None."""
        d = self.d
        if self.asked >= self.max:
            return f"all {self.asked} drafts failed (at most max({MIN_DRAFTS}, budget // 4) = {self.max})"
        if d.stats.n_candidates >= d.settings.budget:
            return f"the budget of {d.settings.budget} candidates is spent"
        if d._cost_exhausted():
            return "the LLM budget (--max-cost / --max-llm-seconds) is spent"
        return None

    def _failure_message(self, why: str) -> str:
        d = self.d
        last = [f"draft {f['n']}" + (f" (candidate {f['id']})" if f["id"] is not None else "")
                + f": gate '{f['gate']}': {_clip(f['reason'], 600)}" for f in self.notes[-2:]]
        return (f"no draft of task '{d.task.name}' passed the verifier: {why}. The task has no seed kernel "
                f"({d.task.no_seed_reason}), so the LLM was asked to write the first one. Last reasons: "
                + (" | ".join(last) or "none recorded")
                + f". Every draft is stored in {Path(d.run_dir) / 'run.sqlite'}; give a starting kernel with "
                  "--seed-kernel FILE, or try another --model or a larger --budget.")

    def summary(self) -> dict[str, Any]:
        """The drafts' line of summary.json."""
        return {"count": self.asked, "stored": len(self.stored), "max": self.max,
                "failed": sum(1 for s in self.stored if not s["passed"]), "passed_candidate": self.passed_id,
                "example": (self.example or {}).get("name")}


def _clip(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def choose_example(task, hardware: list[str], seeds: list[tuple[str, str]], memory=None) -> dict[str, str]:
    """The draft prompt's example kernel: the first memory seed (the best elite of the most similar
    task in the experience memory), else :func:`project_example`."""
    for name, source in seeds:
        if name.startswith(MEMORY_SEED_PREFIX):
            return example_entry(name.split(" ")[0], source, "the best kernel of the most similar task in the "
                                                             "experience memory")
    return project_example(task, hardware, getattr(memory, "sig", None))


def project_example(task, hardware: list[str], sig=None) -> dict[str, str]:
    """The seed kernel of the project task (``experiments/tasks/*.yaml``) most similar to *task*:
    the same op kind first (the memory's task signature: op kind, shape class, dtypes, level),
    ties by name; with no task of the same op kind, the relu seed (the plainest complete module)."""
    from ..memory import signature_of, similarity
    from ..task import load_task
    sig = sig or signature_of(task, hardware)
    ranked: list[tuple[float, str, str, str]] = []
    for path in sorted(PROJECT_TASKS.glob("*.yaml")):
        try:
            other = load_task(path)
            source = other.seeds[0].read_text(encoding="utf-8")
        except (UserError, OSError, UnicodeDecodeError, IndexError):
            continue
        w = similarity(sig, signature_of(other, hardware))
        ranked.append((-w, other.name, other.seeds[0].name, source))
    if not ranked:                          # an installed package: no experiments/ folder
        return shipped_example(sig.op_kind)
    ranked.sort()
    w, name, file, source = ranked[0]
    if -w > 0:
        return example_entry(file, source, f"the seed of project task '{name}', the same kind of op "
                                           f"({sig.op_kind})")
    fallback = next((r for r in ranked if r[1] == FALLBACK_EXAMPLE), ranked[0])
    return example_entry(fallback[2], fallback[3], f"no project task is a {sig.op_kind} op; the plainest "
                                                   "seed of the project")


def shipped_example(op_kind: str) -> dict[str, str]:
    """The example an installed package ships (``prompts/draft_example.py``, a 2-D SiLU),
    for when the project's tasks are not there."""
    from .. import data_dir
    path = data_dir("prompts") / "draft_example.py"
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"no example kernel for the draft prompt: {PROJECT_TASKS} is not there and {path} cannot "
                        f"be read ({exc}).") from None
    return example_entry(path.name, source, f"no project task is at hand (an installed package); a plain complete "
                                            f"module of the format, although the task is a {op_kind} op")
