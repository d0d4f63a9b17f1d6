"""The driver's side of LLM routing: jobs in, decisions out; outcomes in, ``routing`` summary out.

Adaptive routing decides the prompt mode and the model in the driver (the router must see
every outcome, and workers run in other processes) and sends both with the job; under fixed
routing the worker draws the model by weight as before and the hook only keeps the accounts.
Each decision (model, mode, per-model scores, reason, explore or exploit) is added to the
call's LLM log record, which the run store keeps in ``llm_calls``.
"""

from __future__ import annotations

import random
import time
from typing import Any

from ..errors import UserError
from ..mutate import POLICIES, Router, RoutingError, request_mode


def resolve_policy(given: str | None, n_models: int) -> str:
    """``--routing``: fixed or adaptive; default adaptive for an ensemble of more than one model."""
    if given is None:
        return "adaptive" if n_models > 1 else "fixed"
    if given not in POLICIES:
        raise UserError(f"--routing must be one of {', '.join(POLICIES)}; got {given!r}.")
    return given


def model_prices(names: list[str]) -> dict[str, tuple[float, float]]:
    """(USD per prompt token, per output token) from litellm's price map, for the models it prices."""
    from ..mutate import configured_litellm
    litellm = configured_litellm()  # registers the sim provider's prices too
    out = {}
    for name in names:
        info = litellm.model_cost.get(name)
        if info is None and "/" in name:
            info = litellm.model_cost.get(name.split("/", 1)[1])
        if info and info.get("output_cost_per_token") is not None:
            out[name] = (float(info.get("input_cost_per_token") or 0.0), float(info["output_cost_per_token"]))
    return out


class RoutingHook:
    """One run's router and its bookkeeping (see module docstring)."""

    def __init__(self, models: list[dict[str, Any]], *, policy: str | None = None, op_kind: str = "",
                 priors: dict | None = None, max_cost: float | None = None, max_seconds: float | None = None,
                 prices: dict[str, tuple[float, float]] | None = None) -> None:
        names = [m["name"] for m in models]
        self.policy = resolve_policy(policy, len(names))
        if prices is None:
            prices = model_prices(names)
        try:
            self.router = Router({m["name"]: float(m.get("weight", 1.0)) for m in models}, policy=self.policy,
                                 op_kind=op_kind, prices=prices, priors=priors, max_cost=max_cost,
                                 max_seconds=max_seconds)
        except RoutingError as exc:
            raise UserError(str(exc)) from None
        self.committed: dict[int, tuple[float, float]] = {}   # job seed -> predicted (USD, s), in flight
        self.seconds = 0.0                # time spent routing (choose + observe)
        self.requests = 0                 # LLM jobs routed or observed

    @property
    def adaptive(self) -> bool:
        return self.policy == "adaptive"

    def route(self, job: dict[str, Any], *, spent_usd: float, spent_seconds: float, slots_left: int) -> None:
        """Add ``mode``, ``model`` and ``routing`` (the decision) to an adaptive run's job."""
        if not self.adaptive or job.get("kind") == "seed":
            return
        t0 = time.perf_counter()
        parent = job["parent"]
        rng = random.Random(f"route:{job['seed']}")
        try:
            mode = request_mode(job["kind"], bool(parent.get("passed")), bool(job.get("inspirations")), rng)
        except ValueError:
            return                       # the worker reports the bad kind
        # what the jobs in flight will spend counts as spent: a budget is not overrun by the calls in flight
        owed_usd = sum(c for c, _ in self.committed.values())
        owed_s = sum(t for _, t in self.committed.values())
        d = self.router.choose(mode, len(parent.get("source") or ""), rng, spent_usd=spent_usd + owed_usd,
                               spent_seconds=spent_seconds + owed_s, slots_left=slots_left)
        job.update(model=d.model, mode=mode, routing=d.to_dict())
        s = d.scores.get(d.model, {})
        self.committed[job["seed"]] = (float(s.get("usd", 0.0)), float(s.get("seconds", 0.0)))
        self.seconds += time.perf_counter() - t0

    def observe(self, job: dict[str, Any], proposal: dict[str, Any] | None, row: dict[str, Any] | None) -> None:
        """Learn from a finished LLM job (*row* None: a duplicate proposal) and log the decision."""
        self.committed.pop(job.get("seed"), None)
        proposal = proposal or {}
        mutator = proposal.get("mutator") or ""
        log = proposal.get("llm_log") or []
        if not mutator.startswith("llm:") or job.get("kind") == "seed":
            return
        t0 = time.perf_counter()
        name = job.get("model") or mutator.split(":", 1)[1]
        mode = job.get("mode") or (log[-1].get("purpose") if log else None)
        usage = proposal.get("usage") or {}
        parent = job.get("parent") or {}
        passed = bool(row and row.get("passed"))
        value = self.router.observe(
            name, mode or "", passed=passed, parent_objective=parent.get("objective"),
            child_objective=row.get("objective") if passed else None,
            parent_chars=len(parent.get("source") or ""), prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)), seconds=float(usage.get("latency_s", 0.0)),
            cost_usd=float(usage.get("cost_usd", 0.0)), counted="routing" in job)
        if log:
            decision = dict(job.get("routing") or {"model": name, "mode": mode, "policy": self.policy,
                                                   "reason": "fixed weights (drawn by the worker)"})
            log[-1]["routing"] = dict(decision, value=round(value, 4))
        self.seconds += time.perf_counter() - t0
        self.requests += 1

    def summary(self) -> dict[str, Any]:
        out = self.router.summary()
        out["driver_ms_per_request"] = round(1e3 * self.seconds / max(1, self.requests), 4)
        return out
