"""The LLM mutator: prompt (jinja2) -> litellm completion -> edit parsing -> proposal.

Runs inside Ray workers; :meth:`LLMMutator.draft` writes the first kernel of a task without
a seed (docs/llm.md, "Drafts").  It edits text only; candidate code is never executed
here.  Every failure (the LLM call, a reply with no usable edit, an edit that does
not apply or does not parse) becomes ``Proposal(source=None, error=...)`` carrying
the usage and LLM log of the attempts, so the driver can count and store it.
"""

from __future__ import annotations

import random
from pathlib import Path

from .base import LLMUsage, MutationRequest, Proposal
from .edits import EditError, apply_reply, check_source, extract_rewrite, reply_description
from .llm_client import LLMCallError, LLMClient, ModelSpec, choose_model, parse_model_specs
from .prompts import PromptRenderer

__all__ = ["LLMMutator", "ModelSpec", "parse_model_specs", "request_mode"]

#: probability that a mutate (or crossover without a partner) request asks for a full rewrite
REWRITE_PROB = 0.2


def request_mode(kind: str, parent_passed: bool, has_inspirations: bool, rng: random.Random,
                 rewrite_prob: float = REWRITE_PROB) -> str:
    """The prompt mode of a request: fix (any failed parent), crossover, rewrite or mutate."""
    if kind == "fix" or not parent_passed:
        return "fix"
    if kind == "crossover" and has_inspirations:
        return "crossover"
    if kind == "rewrite" or (kind in ("mutate", "crossover") and rng.random() < rewrite_prob):
        return "rewrite"
    if kind in ("mutate", "crossover"):
        return "mutate"
    raise ValueError(f"unknown request kind {kind!r}; expected mutate, rewrite, fix or crossover")


class LLMMutator:
    """Propose kernels with an ensemble of LLMs (one model drawn by weight per request).

    Request kinds: ``mutate`` (SEARCH/REPLACE edits; a full rewrite with probability
    ``rewrite_prob``), ``rewrite``, ``fix`` (also used for any failed parent) and
    ``crossover`` (the first inspiration is the second parent).
    """

    name = "llm"

    def __init__(self, models: list[ModelSpec], *, prompt_dir: str | Path | None = None, seed: int = 0,
                 timeout_s: float = 120.0, max_retries: int = 4, rewrite_prob: float = REWRITE_PROB,
                 max_concurrency: int = 4, backoff_s: float = 2.0) -> None:
        if not models:
            raise ValueError("LLMMutator needs at least one ModelSpec")
        self.models = list(models)
        self.prompt_dir = None if prompt_dir is None else str(prompt_dir)
        self.seed = int(seed)
        self.timeout_s, self.max_retries = float(timeout_s), int(max_retries)
        self.rewrite_prob = float(rewrite_prob)
        self.max_concurrency, self.backoff_s = int(max_concurrency), float(backoff_s)
        self.renderer = PromptRenderer(self.prompt_dir)
        self._client: LLMClient | None = None

    @property
    def client(self) -> LLMClient:
        """The process's client, built on first use (after the mutator reached its worker)."""
        if self._client is None:
            self._client = LLMClient(timeout_s=self.timeout_s, max_retries=self.max_retries,
                                     backoff_s=self.backoff_s, max_concurrency=self.max_concurrency,
                                     models=self.models, seed=self.seed)
        return self._client

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_client"] = state["renderer"] = None    # locks, jinja env: rebuilt where the mutator lands
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.renderer = PromptRenderer(self.prompt_dir)

    def choose(self, request: MutationRequest) -> tuple[ModelSpec, str]:
        """The model and prompt mode for *request*: the router's (``request.model``/``mode``) when the
        driver routed it, else drawn by weight (deterministic in seed and request.seed)."""
        rng = random.Random(f"{self.seed}:{request.seed}")
        if request.model is not None:
            model = next((m for m in self.models if m.name == request.model), None)
            if model is None:
                raise ValueError(f"the router chose model {request.model!r}, which is not in this ensemble")
        else:
            model = choose_model(self.models, rng)
        mode = request.mode or request_mode(request.kind, request.parent.passed, bool(request.inspirations), rng,
                                            self.rewrite_prob)
        return model, mode

    def propose(self, request: MutationRequest) -> Proposal:
        prompt_id = (request.prompt or {}).get("id")
        parents = (request.parent.id,)
        try:
            model, mode = self.choose(request)
        except ValueError as exc:
            return Proposal(source=None, mutator=self.name, error=str(exc), parent_ids=parents, prompt_id=prompt_id)
        mutator = f"llm:{model.name}"
        if mode == "crossover":
            parents = (request.parent.id, request.inspirations[0].id)
        try:
            messages = self.renderer.mutation_messages(request, mode)
        except Exception as exc:        # a broken user template must not kill the worker
            return Proposal(source=None, mutator=mutator, parent_ids=parents, prompt_id=prompt_id,
                            error=f"prompt template for {mode} failed: {type(exc).__name__}: {exc}")
        try:
            reply = self.client.complete(messages, model, purpose=mode)
        except LLMCallError as exc:
            return Proposal(source=None, mutator=mutator, parent_ids=parents, prompt_id=prompt_id,
                            error=str(exc), usage=exc.usage, llm_log=exc.attempts)
        usage: LLMUsage = reply.usage
        prefer = "rewrite" if mode in ("rewrite", "crossover") else "diff"
        try:
            outcome = apply_reply(request.parent.source, reply.text, prefer=prefer)
        except EditError as exc:
            reply.log_record["edit_error"] = str(exc)
            return Proposal(source=None, mutator=mutator, parent_ids=parents, prompt_id=prompt_id,
                            error=f"edit did not apply ({mode}): {exc}", usage=usage, llm_log=reply.attempts,
                            description=reply_description(reply.text))
        except Exception as exc:  # noqa: BLE001 - the call was paid for: keep its usage and log
            reply.log_record["edit_error"] = f"{type(exc).__name__}: {exc}"
            return Proposal(source=None, mutator=mutator, parent_ids=parents, prompt_id=prompt_id,
                            error=f"applying the reply failed ({mode}): {type(exc).__name__}: {str(exc)[:200]}",
                            usage=usage, llm_log=reply.attempts)
        reply.log_record["edit"] = {"kind": outcome.kind, "matches": outcome.matches}
        description = reply_description(reply.text) or f"{mode} by {model.name}"
        return Proposal(source=outcome.source, mutator=mutator, description=f"[{mode}] {description}",
                        parent_ids=parents, prompt_id=prompt_id, usage=usage, llm_log=reply.attempts)

    def draft(self, task, draft: dict, seed: int) -> Proposal:
        """A first kernel for *task*, which has none (*draft*: see :mod:`.drafts`); never raises."""
        model = choose_model(self.models, random.Random(f"{self.seed}:{seed}"))
        mutator = f"llm:{model.name}"
        try:
            messages = self.renderer.draft_messages(task, draft)
        except Exception as exc:        # a broken user template must not kill the worker
            return Proposal(source=None, mutator=mutator,
                            error=f"prompt template for draft failed: {type(exc).__name__}: {exc}")
        try:
            reply = self.client.complete(messages, model, purpose="draft")
        except LLMCallError as exc:
            return Proposal(source=None, mutator=mutator, error=str(exc), usage=exc.usage, llm_log=exc.attempts)
        try:
            source = extract_rewrite(reply.text)
            check_source(source, "")
        except EditError as exc:
            reply.log_record["edit_error"] = str(exc)
            return Proposal(source=None, mutator=mutator, error=f"no kernel module in the reply (draft): {exc}",
                            usage=reply.usage, llm_log=reply.attempts, description=reply_description(reply.text))
        reply.log_record["edit"] = {"kind": "draft", "matches": []}
        description = reply_description(reply.text) or f"draft by {model.name}"
        return Proposal(source=source, mutator=mutator, description=f"[draft {draft.get('n', 1)}] {description}",
                        usage=reply.usage, llm_log=reply.attempts)
