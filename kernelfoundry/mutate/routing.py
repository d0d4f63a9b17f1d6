"""Resource-aware routing over an LLM ensemble: which model answers each request.

Pure numbers, no I/O: the driver asks :meth:`Router.choose` for every LLM job and reports
each outcome to :meth:`Router.observe`.  Per (model, request kind) the router learns

- the value of a reply: the memory's reward (values.py) shifted so a wasted slot is 0 --
  stage 1 (fix): 1 if the child is correct; stage 2: 0.1 for a correct child plus its log
  speedup over the parent (clipped at 0.5), 0 for a failed, slower or duplicate one.  It is
  modelled as P(correct) (a Beta posterior) times the value of a correct child (stage 2: a
  Gaussian posterior, memory/bandit.py's :class:`Arm`; stage 1: 1).  Priors come from the
  experience memory's pooled values of action ``llm:MODEL`` on similar tasks (stage 1 gives
  P(correct), stage 2 the expected reward), else from the model's ensemble weight with the
  operator bandit's cold prior (the task file's weights become priors);
- output tokens: a per-(model, kind) ratio to the parent's length (prior: 0.35 for edits,
  1.1 for rewrites), prompt tokens per model;
- latency: a per-model line a + b * output tokens (ridge-fitted, prior 2 s + 20 ms/token);
- cost: litellm's price map (given by the caller), else the model's observed cost per call.

A request goes to the model with the highest Thompson-sampled value per unit of resource,
``value / (1 + cost / cost_ref + seconds / time_ref)`` -- the 1 is the candidate slot itself;
``cost_ref`` and ``time_ref`` are the money and LLM seconds left per remaining slot under
``--max-cost`` / ``--max-llm-seconds``, else the geometric mean of the ensemble's predicted
costs and times (symmetric in price ratios), so a call of typical price and duration costs one
slot's worth each.  Models whose predicted
cost or time exceeds what is left are not chosen (unless none fits: then the cheapest), and a
model with fewer than ``min_share`` of the decisions is chosen outright, so none is starved.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from ..memory import (COLD_MEAN, COLD_PRIOR_N, DRAFT, FAILED_REFINE, KAPPA, PRIOR_CAP, REFINE, REWARD_SD, Arm, gain_of,
                      reward_of)

POLICIES = ("fixed", "adaptive")
MODES = ("mutate", "rewrite", "fix", "crossover")
#: reward of a wasted slot per stage: the routing value is reward - floor (>= 0)
FLOOR = {DRAFT: 0.0, REFINE: FAILED_REFINE}
#: output tokens per parent token, before any reply was seen (edits vs whole modules)
LENGTH_PRIOR = {"mutate": 0.35, "fix": 0.35, "rewrite": 1.1, "crossover": 1.1}
LENGTH_PRIOR_N = 2.0
CHARS_PER_TOKEN = 4.0
#: latency prior: first-token seconds and seconds per output token, worth LATENCY_PRIOR_N replies
LATENCY_PRIOR = (2.0, 0.02)
LATENCY_PRIOR_N = 2.0
MIN_VALUE = 1e-4
#: the most a correct child is worth (0.1 + the clipped log gain)
GAIN_CAP = 0.1 + 0.5
#: Thompson samples are drawn from the posterior with its spread scaled by this (tempered sampling:
#: a run has tens of requests, not thousands; the min_share floor keeps every model explored)
EXPLORATION = 0.5


class RoutingError(ValueError):
    """A routing option is invalid."""


def stage_of_mode(mode: str) -> int:
    return DRAFT if mode == "fix" else REFINE


def routing_value(mode: str, passed: bool, parent_objective: float | None, child_objective: float | None) -> float:
    """The value of one reply (see module docstring): >= 0, 0 for a wasted slot."""
    stage = stage_of_mode(mode)
    return max(0.0, reward_of(stage, passed, parent_objective, child_objective) - FLOOR[stage])


@dataclass
class _Cost:
    """Per model: tokens, seconds and money seen, for the length, latency and price estimates."""

    n: int = 0
    prompt_tokens: float = 0.0
    cost: float = 0.0
    # latency regression sufficient statistics (x = output tokens, y = seconds), prior included
    sx: float = 0.0
    sy: float = 0.0
    sxx: float = 0.0
    sxy: float = 0.0
    sn: float = 0.0

    def __post_init__(self) -> None:
        a, b = LATENCY_PRIOR
        for x in (200.0, 1000.0):               # two pseudo-replies on the prior line
            self.add_latency(x, a + b * x, LATENCY_PRIOR_N / 2)

    def add_latency(self, x: float, y: float, w: float = 1.0) -> None:
        self.sn += w
        self.sx += w * x
        self.sy += w * y
        self.sxx += w * x * x
        self.sxy += w * x * y

    def seconds(self, tokens: float) -> float:
        var = self.sxx - self.sx * self.sx / self.sn
        b = (self.sxy - self.sx * self.sy / self.sn) / var if var > 1e-9 else 0.0
        b = max(0.0, b)
        a = max(0.0, (self.sy - b * self.sx) / self.sn)
        return a + b * tokens


@dataclass
class Tally:
    """What one (model, kind) -- or one model -- was chosen for and earned."""

    calls: int = 0
    correct: int = 0
    improved: int = 0
    value: float = 0.0
    gain: float = 0.0
    cost_usd: float = 0.0
    llm_seconds: float = 0.0
    completion_tokens: int = 0
    explore: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "correct": self.correct, "improved": self.improved,
                "value": round(self.value, 4), "gain": round(self.gain, 4), "cost_usd": round(self.cost_usd, 6),
                "llm_seconds": round(self.llm_seconds, 2), "completion_tokens": self.completion_tokens,
                "explore": self.explore}


@dataclass
class Decision:
    model: str
    mode: str
    policy: str
    reason: str
    explore: bool = False
    scores: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "mode": self.mode, "policy": self.policy, "reason": self.reason,
                "explore": self.explore, "scores": self.scores}


class Router:
    """Chooses a model per request and learns from outcomes (see module docstring)."""

    def __init__(self, models: dict[str, float], *, policy: str = "adaptive", op_kind: str = "",
                 prices: dict[str, tuple[float, float]] | None = None, priors: dict[int, dict] | None = None,
                 max_cost: float | None = None, max_seconds: float | None = None, min_share: float = 0.05) -> None:
        """*models*: name -> ensemble weight; *prices*: name -> (USD per prompt token, per output token);
        *priors*: the memory's {stage: {action: Prior}} for similar tasks."""
        if policy not in POLICIES:
            raise RoutingError(f"--routing must be one of {', '.join(POLICIES)}; got {policy!r}.")
        if not models:
            raise RoutingError("routing needs at least one model")
        self.weights = dict(models)
        self.names = list(models)
        self.policy, self.op_kind = policy, op_kind
        self.prices = dict(prices or {})
        self.max_cost, self.max_seconds, self.min_share = max_cost, max_seconds, min_share
        self.correct: dict[tuple[str, str], Arm] = {}      # P(correct): Beta(prior_n*mean + k, ...)
        self.arms: dict[tuple[str, str], Arm] = {}         # value of a correct child (stage 2)
        top = max(self.weights.values())
        mem = priors or {}
        for name, w in self.weights.items():
            p1, p2 = mem.get(DRAFT, {}).get(action_name_of(name)), mem.get(REFINE, {}).get(action_name_of(name))
            if p1 is not None and p1.n > 0:
                ok = Arm(min(p1.n, PRIOR_CAP), min(0.99, max(0.01, p1.mean)), source="memory")
            else:
                ok = Arm(COLD_PRIOR_N, min(0.99, max(0.01, COLD_MEAN[DRAFT] + KAPPA[DRAFT] * math.log(w / top))))
            if p2 is not None and p2.n > 0:        # E[reward] = P(ok) * (correct value + floor) - floor
                good = Arm(min(p2.n, PRIOR_CAP), min(GAIN_CAP, max(MIN_VALUE, (p2.mean - FLOOR[REFINE]) / ok.mean)),
                           source="memory")
            else:
                good = Arm(COLD_PRIOR_N, max(MIN_VALUE, COLD_MEAN[REFINE] - FLOOR[REFINE]
                                             + KAPPA[REFINE] * math.log(w / top)))
            for mode in MODES:
                self.correct[(name, mode)] = Arm(ok.prior_n, ok.prior_mean, source=ok.source)
                self.arms[(name, mode)] = Arm(good.prior_n, good.prior_mean, source=good.source)
        self.length = {(n, m): [LENGTH_PRIOR_N * LENGTH_PRIOR[m], LENGTH_PRIOR_N] for n in self.names for m in MODES}
        self.costs = {n: _Cost() for n in self.names}
        self.tally: dict[tuple[str, str], Tally] = {}
        self.decisions = 0
        self.reasons: dict[str, int] = {}

    # -- estimates -----------------------------------------------------------------
    def predict(self, name: str, mode: str, parent_chars: int) -> tuple[float, float, float]:
        """(output tokens, USD, seconds) predicted for *name* answering a *mode* request."""
        pt = max(50.0, parent_chars / CHARS_PER_TOKEN)
        s, n = self.length[(name, mode)]
        tokens = pt * s / n
        c = self.costs[name]
        prompt = c.prompt_tokens / c.n if c.n else 3.0 * pt + 1500.0
        price = self.prices.get(name)
        if price is not None:
            usd = price[0] * prompt + price[1] * tokens
        else:
            usd = c.cost / c.n if c.n else 0.0
        return tokens, usd, c.seconds(tokens)

    # -- decisions -----------------------------------------------------------------
    def choose(self, mode: str, parent_chars: int, rng: random.Random, *, spent_usd: float = 0.0,
               spent_seconds: float = 0.0, slots_left: int = 1) -> Decision:
        """The model for one request of *mode* on a parent of *parent_chars* characters."""
        if mode not in MODES:
            raise RoutingError(f"unknown request kind {mode!r}; expected one of {', '.join(MODES)}")
        self.decisions += 1
        if self.policy == "fixed" or len(self.names) == 1:
            name = rng.choices(self.names, weights=[self.weights[n] for n in self.names])[0]
            return self._count(Decision(name, mode, self.policy, "fixed weights" if len(self.names) > 1 else "only model"))
        pred = {n: self.predict(n, mode, parent_chars) for n in self.names}
        slots = max(1, slots_left)
        left_usd = None if self.max_cost is None else max(0.0, self.max_cost - spent_usd)
        left_s = None if self.max_seconds is None else max(0.0, self.max_seconds - spent_seconds)
        fits = [n for n in self.names if (left_usd is None or pred[n][1] <= left_usd)
                and (left_s is None or pred[n][2] <= left_s)]
        c_ref = left_usd / slots if left_usd is not None else _geomean([p[1] for p in pred.values()])
        t_ref = left_s / slots if left_s is not None else _geomean([p[2] for p in pred.values()])
        scores: dict[str, dict[str, float]] = {}
        for n in self.names:
            tokens, usd, secs = pred[n]
            denom = 1.0 + (usd / c_ref if c_ref > 0 else 0.0) + (secs / t_ref if t_ref > 0 else 0.0)
            mean, sample = self._value(n, mode, rng)
            scores[n] = {"p_correct": round(self.correct[(n, mode)].mean, 3), "value": round(mean, 4),
                         "sample": round(sample, 4), "tokens": round(tokens), "usd": round(usd, 6),
                         "seconds": round(secs, 2), "per_resource": round(mean / denom, 5), "score": sample / denom}
        if not fits:
            name = min(self.names, key=lambda n: (pred[n][1], pred[n][2]))
            return self._count(Decision(name, mode, "adaptive", "budget: no model fits what is left; the cheapest",
                                        False, _rounded(scores)))
        best_mean = max(fits, key=lambda n: scores[n]["per_resource"])
        if self.decisions > 1 / self.min_share:
            starved = [n for n in fits if self._calls(n) < self.min_share * self.decisions]
            if starved:
                name = min(starved, key=self._calls)
                return self._count(Decision(name, mode, "adaptive", f"explore: starved ({self._calls(name)} of "
                                            f"{self.decisions - 1} decisions)", True, _rounded(scores)))
        name = max(fits, key=lambda n: scores[n]["score"])
        explore = name != best_mean
        why = (f"{'explore' if explore else 'exploit'}: best sampled value per resource "
               f"({scores[name]['sample']:.3f} / ({_denominator(scores[name])}))")
        if len(fits) < len(self.names):
            why += f"; over budget: {', '.join(n for n in self.names if n not in fits)}"
        return self._count(Decision(name, mode, "adaptive", why, explore, _rounded(scores)))

    def _value(self, name: str, mode: str, rng: random.Random) -> tuple[float, float]:
        """(posterior mean, Thompson sample) of one reply's value: P(correct) x value of a correct child."""
        ok = self.correct[(name, mode)]
        temper = 1.0 / EXPLORATION ** 2
        a = temper * (ok.prior_n * ok.prior_mean + ok.n_positive)
        b = temper * (ok.prior_n * (1.0 - ok.prior_mean) + ok.n - ok.n_positive)
        if stage_of_mode(mode) == DRAFT:
            return ok.mean, rng.betavariate(a, b)
        good = self.arms[(name, mode)]
        g = min(GAIN_CAP, max(MIN_VALUE, good.sample(rng, EXPLORATION * REWARD_SD[REFINE])))
        return ok.mean * good.mean, max(MIN_VALUE, rng.betavariate(a, b) * g)

    def _calls(self, name: str) -> int:
        return sum(t.calls for (n, _), t in self.tally.items() if n == name)

    def _count(self, d: Decision) -> Decision:
        t = self.tally.setdefault((d.model, d.mode), Tally())
        t.calls += 1
        t.explore += int(d.explore)
        key = d.reason.split(":")[0] if d.policy == "adaptive" else d.reason
        self.reasons[key] = self.reasons.get(key, 0) + 1
        return d

    # -- learning ------------------------------------------------------------------
    def observe(self, name: str, mode: str, *, passed: bool, parent_objective: float | None,
                child_objective: float | None, parent_chars: int, prompt_tokens: int, completion_tokens: int,
                seconds: float, cost_usd: float, counted: bool = True) -> float:
        """Learn from one reply (a duplicate or an unusable edit: passed=False); returns its value.

        *counted*: False when the request was not routed here (fixed policy: the worker drew the
        model), so its call is tallied now."""
        if name not in self.weights or mode not in MODES:
            return 0.0
        value = routing_value(mode, passed, parent_objective, child_objective)
        ok = self.correct[(name, mode)]
        ok.n += 1
        ok.sum_r += float(passed)
        ok.n_positive += int(passed)
        if passed and stage_of_mode(mode) == REFINE:
            arm = self.arms[(name, mode)]
            arm.n += 1
            arm.sum_r += value
        if completion_tokens > 0:
            length = self.length[(name, mode)]
            length[0] += completion_tokens / max(50.0, parent_chars / CHARS_PER_TOKEN)
            length[1] += 1
        c = self.costs[name]
        c.n += 1
        c.prompt_tokens += prompt_tokens
        c.cost += cost_usd
        if seconds > 0:
            c.add_latency(float(completion_tokens), float(seconds))
        t = self.tally.setdefault((name, mode), Tally())
        if not counted:
            t.calls += 1
        gain = gain_of(parent_objective, child_objective) if passed else None
        t.correct += int(passed)
        t.improved += int(gain is not None and gain > 0)
        t.value += value
        t.gain += max(0.0, gain or 0.0)
        t.cost_usd += cost_usd
        t.llm_seconds += seconds
        t.completion_tokens += completion_tokens
        return value

    # -- reporting -----------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """summary.json's ``routing``: per model totals and per kind, and why models were chosen."""
        models: dict[str, Any] = {}
        for name in self.names:
            total, kinds = Tally(), {}
            for (n, mode), t in sorted(self.tally.items()):
                if n != name:
                    continue
                kinds[mode] = dict(t.to_dict(), p_correct=round(self.correct[(n, mode)].mean, 3),
                                   correct_value=round(self.arms[(n, mode)].mean, 4))
                for k in ("calls", "correct", "improved", "value", "gain", "cost_usd", "llm_seconds",
                          "completion_tokens", "explore"):
                    setattr(total, k, getattr(total, k) + getattr(t, k))
            models[name] = dict(total.to_dict(), weight=self.weights[name],
                                prior=self.correct[(name, "mutate")].source, kinds=kinds)
        return {"policy": self.policy, "op_kind": self.op_kind, "decisions": self.decisions,
                "reasons": dict(sorted(self.reasons.items())), "models": models}


def action_name_of(model: str) -> str:
    """The memory's action name of an LLM model (the candidate's mutator)."""
    return f"llm:{model}"


def _geomean(xs: list[float]) -> float:
    """The geometric mean of the positive values (0 if none): a reference price symmetric in ratios."""
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def _denominator(s: dict[str, float]) -> str:
    return f"1 + ${s['usd']:.4f} + {s['seconds']:.1f} s, normalised"


def _rounded(scores: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    for s in scores.values():
        s["score"] = round(s["score"], 5)
    return scores


__all__ = ["Decision", "POLICIES", "Router", "RoutingError", "action_name_of", "routing_value"]
