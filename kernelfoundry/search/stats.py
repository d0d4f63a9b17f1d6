"""Running counters of a search and ``summary.json``; rebuilt from the store on resume."""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records import is_inconclusive
from ..store import RunStore
from .archive import KernelArchive


@dataclass
class RunStats:
    """Counters updated once per stored candidate (O(1) per candidate)."""

    n_candidates: int = 0
    n_correct: int = 0
    best_objective: float | None = None
    best_candidate_id: int | None = None
    gate_failures: Counter = field(default_factory=Counter)
    mutators: Counter = field(default_factory=Counter)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    llm_seconds: float = 0.0             # summed latency of LLM calls (a sim model's is virtual)
    duplicates: int = 0
    verdicts_cached: int = 0             # verdicts read from a bench's shared cache instead of verified
    workers_replaced: int = 0
    wall_seconds_before: float = 0.0     # from earlier sessions of a resumed run
    started: float = field(default_factory=time.time)
    gate_seconds: dict[str, list[float]] = field(default_factory=dict)   # gate -> seconds, per verified candidate
    inconclusive: int = 0                # failed only for the verifier's own memory or time limit

    def note(self, *, cid: int, passed: bool, gate: str | None, objective: float | None, mutator: str,
             usage: dict[str, Any] | None, gates: list[dict[str, Any]] | None = None) -> None:
        self.n_candidates += 1
        for g in gates or ():
            seconds = g.get("seconds") if isinstance(g, dict) else None
            if isinstance(seconds, (int, float)) and math.isfinite(seconds) and g.get("name") \
                    and not g.get("cached"):
                self.gate_seconds.setdefault(str(g["name"]), []).append(float(seconds))
        self.mutators[mutator.split(":")[0]] += 1
        if passed:
            self.n_correct += 1
            if objective is not None and (self.best_objective is None or objective > self.best_objective):
                self.best_objective, self.best_candidate_id = objective, cid
        elif gate:
            self.gate_failures[gate] += 1
            self.inconclusive += is_inconclusive({"passed": passed, "gates": gates or []})
        self.add_usage(usage)

    def add_usage(self, usage: dict[str, Any] | None) -> None:
        if usage:
            self.llm_calls += int(usage.get("calls", 0))
            self.prompt_tokens += int(usage.get("prompt_tokens", 0))
            self.completion_tokens += int(usage.get("completion_tokens", 0))
            self.cost_usd += float(usage.get("cost_usd", 0.0))
            self.llm_seconds += float(usage.get("latency_s", 0.0) or 0.0)

    @classmethod
    def from_store(cls, store: RunStore) -> "RunStats":
        stats = cls()
        for row in store.iter_candidates(columns="id, passed, gate, objective, mutator, llm_calls, "
                                                 "prompt_tokens, completion_tokens, cost_usd, gates"):
            stats.note(cid=row.id, passed=row.passed, gate=row.gate, objective=row.objective,
                       mutator=row.mutator, gates=row.gates,
                       usage={"calls": row.llm_calls, "prompt_tokens": row.prompt_tokens,
                              "completion_tokens": row.completion_tokens, "cost_usd": row.cost_usd})
        # LLM calls not attached to a stored candidate (duplicates, prompt evolution).
        extra = store.conn.execute("SELECT record FROM llm_calls WHERE candidate_id IS NULL").fetchall()
        for (rec,) in extra:
            data = json.loads(rec)
            stats.add_usage({"calls": 1, "prompt_tokens": data.get("prompt_tokens", 0),
                             "completion_tokens": data.get("completion_tokens", 0),
                             "cost_usd": data.get("cost_usd", 0.0)})
        stats.llm_seconds = sum(float(json.loads(rec).get("latency_s") or 0.0)
                                for (rec,) in store.conn.execute("SELECT record FROM llm_calls"))
        stats.duplicates = int(store.get_meta("duplicates", 0))
        stats.verdicts_cached = int(store.get_meta("verdicts_cached", 0))
        stats.wall_seconds_before = float(store.get_meta("wall_seconds", 0.0))
        return stats

    @property
    def wall_seconds(self) -> float:
        return self.wall_seconds_before + (time.time() - self.started)

    def summary(self, *, task: str, archive: KernelArchive, hardware: list[str], budget: int,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
        best = self.best_objective
        out = {
            "task": task,
            "n_candidates": self.n_candidates,
            "n_correct": self.n_correct,
            "budget": budget,
            "best_objective": None if best is None or not math.isfinite(best) else best,
            "best_candidate_id": self.best_candidate_id,
            "num_elites": archive.num_elites,
            "coverage": archive.coverage,
            "qd_score": archive.qd_score,
            "gate_failures": dict(sorted(self.gate_failures.items())),
            "inconclusive": self.inconclusive,
            "mutators": dict(sorted(self.mutators.items())),
            "duplicates_skipped": self.duplicates,
            "verdicts_cached": self.verdicts_cached,
            "workers_replaced": self.workers_replaced,
            "llm": {"calls": self.llm_calls, "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens, "cost_usd": round(self.cost_usd, 6),
                    "seconds": round(self.llm_seconds, 3)},
            "wall_seconds": round(self.wall_seconds, 3),
            "gate_seconds": self.gate_seconds_summary(),
            "hardware": list(hardware),
        }
        if extra:
            out.update(extra)
        return out


    def gate_seconds_summary(self) -> dict[str, dict[str, float]]:
        """Per verifier gate: candidates that reached it, median, 90th percentile and total seconds."""
        return {name: {"n": len(v), "median": round(percentile(v, 0.5), 3), "p90": round(percentile(v, 0.9), 3),
                       "total": round(sum(v), 3)}
                for name, v in sorted(self.gate_seconds.items()) if v}


def percentile(values: list[float], q: float) -> float:
    """The *q* quantile of *values* (linear interpolation between the closest ranks)."""
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def format_gate_seconds(summary: dict[str, dict[str, float]]) -> str:
    """One line: median / p90 seconds per gate, in the verifier's order."""
    order = ("hack", "load", "correctness", "trace", "model", "compile", "confirm")
    names = [n for n in order if n in summary] + [n for n in summary if n not in order]
    return ", ".join(f"{n} {summary[n]['median']:.2f}/{summary[n]['p90']:.2f}" for n in names)


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write JSON so that readers never see a half-written file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)
