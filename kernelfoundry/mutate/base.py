"""The mutator interface: a parent (plus inspirations) in, a proposed source out.

Mutators run inside Ray workers.  They never execute candidate code: the
built-in mutator edits the AST, the LLM mutator edits text.  A failed edit is a
:class:`Proposal` with ``source=None`` and ``error`` set, never an exception.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol

from ..task import Task


@dataclass
class ParentView:
    """What a mutator may know about an archived (or failed) candidate."""

    id: int
    source: str
    objective: float | None = None
    descriptors: dict[str, float] | None = None
    cell: tuple[int, ...] | None = None
    passed: bool = True
    gate: str | None = None           # first failing gate, if it failed
    feedback: str = ""                # verifier reason / model breakdown, written for the LLM
    hardware: dict[str, Any] = field(default_factory=dict)   # name -> HardwareScore dict

    def to_dict(self) -> dict[str, Any]:
        """A shallow dict (the driver sends one per job: a deep copy of every hardware score cost more)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class LLMUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0           # LLM seconds (a sim model's virtual latency)

    def to_dict(self) -> dict[str, Any]:
        """A shallow dict (the driver sends one per job: a deep copy of every hardware score cost more)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def add(self, other: "LLMUsage") -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost_usd += other.cost_usd
        self.latency_s += other.latency_s


@dataclass
class MutationRequest:
    """One job for a mutator."""

    task: Task
    parent: ParentView
    kind: str = "mutate"                        # "mutate" | "crossover" | "fix"
    inspirations: list[ParentView] = field(default_factory=list)
    target_cell: dict[str, Any] | None = None  # {"cell": [i, j], "description": "..."}
    seed: int = 0
    prompt: dict[str, Any] | None = None        # prompt variant (issue: meta-prompts), or None
    operator_order: list[str] | None = None     # built-in operators to try first, in order (memory bandit)
    experiences: list[dict[str, Any]] = field(default_factory=list)   # memory: similar tasks' valued edits
    model: str | None = None                    # the driver's router chose this model (LLM mutator)
    mode: str | None = None                     # ... for this prompt mode (mutate, rewrite, fix, crossover)


@dataclass
class Proposal:
    """A mutator's answer."""

    source: str | None
    mutator: str                     # e.g. "builtin:grouped_order", "llm:openai/gpt-4o"
    description: str = ""
    parent_ids: tuple[int, ...] = ()
    prompt_id: int | None = None
    error: str | None = None         # why no source came out (edit did not apply, LLM failed, ...)
    usage: LLMUsage = field(default_factory=LLMUsage)
    llm_log: list[dict[str, Any]] = field(default_factory=list)   # request/response records

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["parent_ids"] = list(self.parent_ids)
        return d


class Mutator(Protocol):
    name: str

    def propose(self, request: MutationRequest) -> Proposal: ...
