"""Thompson sampling over the built-in mutator's operators, primed by the memory.

Each (stage, operator) has a Gaussian posterior on its mean reward (values.py).  The
prior is the memory's pooled value for similar tasks when it holds some (weight = its
similarity-weighted count, at most PRIOR_CAP), else a weak prior from the operator's
fixed weight (``docs/builtin_mutator.md``), so a cold start behaves like the fixed draw.
For each job the driver samples every operator of the request's kind once and sends
the operators in that order; the mutator applies the first that fits, and the reward
of what it produced updates that operator's posterior.

When the memory values some operators of a kind and not others, the ones it knows nothing
about go first until this run has observed each once: the memory only holds values for
operators that applied to similar tasks, so its silence means "never applied there", not
"worse", and its values must not crowd out what the run has not tried (docs/memory.md).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from .store import Prior
from .values import DRAFT, REFINE

#: reward noise assumed per stage (stage 1 rewards are 0/1, stage 2 log-gains)
REWARD_SD = {DRAFT: 0.5, REFINE: 0.15}
#: the cold prior maps an operator's fixed weight w to a mean of COLD_MEAN + KAPPA * log(w / max w)
#: (stage 1 rewards are success rates: an unknown operator starts at even odds)
COLD_MEAN = {DRAFT: 0.5, REFINE: 0.0}
KAPPA = {DRAFT: 0.1, REFINE: 0.03}
#: reward of a proposal that duplicates a stored candidate (a wasted job)
DUPLICATE_REWARD = -0.05
COLD_PRIOR_N = 2.0
PRIOR_CAP = 20.0


@dataclass
class Arm:
    prior_n: float
    prior_mean: float
    n: int = 0
    sum_r: float = 0.0
    n_positive: int = 0
    source: str = "weight"          # "weight" or "memory": where the prior came from

    @property
    def mean(self) -> float:
        return (self.prior_n * self.prior_mean + self.sum_r) / (self.prior_n + self.n)

    def sample(self, rng: random.Random, sd: float) -> float:
        return rng.gauss(self.mean, sd / math.sqrt(self.prior_n + self.n))


@dataclass
class OperatorBandit:
    """Posteriors per (stage, operator name); see the module docstring."""

    operators: dict[str, tuple[str, float]]           # name -> (kind, fixed weight)
    priors: dict[int, dict[str, Prior]] = field(default_factory=dict)
    arms: dict[tuple[int, str], Arm] = field(default_factory=dict)
    primed: set[tuple[str, int]] = field(default_factory=set)     # (kind, stage) with some memory prior

    def __post_init__(self) -> None:
        top = {}
        for kind, w in self.operators.values():
            top[kind] = max(top.get(kind, 0.0), w)
        for stage in (DRAFT, REFINE):
            mem = self.priors.get(stage, {})
            for name, (kind, w) in self.operators.items():
                p = mem.get(action_name(name))
                if p is not None and p.n > 0:
                    self.arms[(stage, name)] = Arm(min(p.n, PRIOR_CAP), p.mean, source="memory")
                    self.primed.add((kind, stage))
                else:
                    self.arms[(stage, name)] = Arm(COLD_PRIOR_N, COLD_MEAN[stage] + KAPPA[stage] * math.log(w / top[kind]))

    def order(self, kind: str, stage: int, rng: random.Random, tried: frozenset[str] = frozenset()) -> list[str]:
        """The operators of *kind*, best Thompson sample first; operators in *tried* (already applied
        to this parent) after all the others, so every operator that fits a parent gets its turn.  When
        the memory primed this kind, operators it has no value for and this run has not observed yet
        come before the rest (see the module docstring)."""
        sd = REWARD_SD[stage]
        primed = (kind, stage) in self.primed
        scored = []
        for name, (k, _) in self.operators.items():
            if k == kind:
                arm = self.arms[(stage, name)]
                known = not primed or arm.source == "memory" or arm.n > 0
                scored.append((name in tried, known, -arm.sample(rng, sd), name))
        return [name for *_, name in sorted(scored)]

    def update(self, stage: int, operator: str, reward: float) -> None:
        arm = self.arms.get((stage, operator))
        if arm is not None:
            arm.n += 1
            arm.sum_r += reward
            arm.n_positive += int(reward > 0)

    def summary(self) -> dict[str, dict[str, float | int | str]]:
        """Per "stage:operator": posterior mean, observations this run (and how many paid off), and
        where the prior came from."""
        return {f"{stage}:{name}": {"mean": round(arm.mean, 4), "n": arm.n, "paid_off": arm.n_positive,
                                    "prior": arm.source,
                                    "prior_n": round(arm.prior_n, 2)}
                for (stage, name), arm in sorted(self.arms.items())}


def action_name(operator: str) -> str:
    """The memory's action name of a built-in operator."""
    return f"builtin:{operator}"
