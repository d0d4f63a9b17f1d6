"""What every built-in operator shares: its context, its result and the bounds on
template-parameter spaces."""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass
from typing import Any, Callable

from ..candidate import HINT_PARAMS, space_size
from ..task import Task
from .ast_module import KernelModule, Skip
from .base import ParentView

#: At most this many values per template parameter.
MAX_VALUES = 6
#: At most this many configs in a whole space (hints included).
MAX_CONFIGS = 2048
#: At most this many kernel (non-hint) configs: each is traced separately.
MAX_KERNEL_CONFIGS = 64
#: The verifier traces this many kernel configs by default (the default config and a
#: seeded sample), so growing a block shifts its window rather than widen the space past it.
TRACED_KERNEL_CONFIGS = 8

WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)


@dataclass
class OpContext:
    """The parent an operator edits, a seeded RNG, and (for crossover) the other parent."""

    module: KernelModule
    rng: random.Random
    parent: ParentView
    task: Task | None = None
    other: KernelModule | None = None
    other_view: ParentView | None = None


@dataclass(frozen=True)
class Edit:
    """An operator's result: the edited tree and one line saying what changed."""

    tree: ast.Module
    description: str


@dataclass(frozen=True)
class Operator:
    """A named edit.  ``apply`` raises :class:`Skip` (with the reason) when it does not apply."""

    name: str
    kind: str                     # "mutate" | "crossover" | "fix"
    weight: float
    apply: Callable[[OpContext], Edit]


def kernel_space_size(space: dict[str, list[Any]]) -> int:
    return space_size({k: v for k, v in space.items() if k not in HINT_PARAMS})


def check_space(space: dict[str, list[Any]]) -> None:
    """Skip unless *space* is within the bounds above."""
    for name, values in space.items():
        if len(values) > MAX_VALUES:
            raise Skip(f"PARAMS[{name!r}] would hold {len(values)} values (max {MAX_VALUES})")
    if space_size(space) > MAX_CONFIGS:
        raise Skip(f"space would hold {space_size(space)} configs (max {MAX_CONFIGS})")
    if kernel_space_size(space) > MAX_KERNEL_CONFIGS:
        raise Skip(f"space would hold {kernel_space_size(space)} kernel configs (max {MAX_KERNEL_CONFIGS})")


def fit_space(space: dict[str, list[Any]], keep: str, rng: random.Random) -> dict[str, list[Any]]:
    """Trim non-default values of parameters other than *keep* until *space* is in bounds."""
    space = {k: list(v) for k, v in space.items()}
    while True:
        try:
            check_space(space)
            return space
        except Skip:
            trimmable = [k for k, v in space.items() if k != keep and len(v) > 1]
            if not trimmable:
                raise
            widest = max(len(space[k]) for k in trimmable)
            name = rng.choice([k for k in trimmable if len(space[k]) == widest])
            space[name].pop(rng.randrange(1, len(space[name])))


def best_params(parent: ParentView) -> dict[str, Any]:
    """The model's best config for the parent on its first hardware (sorted by name), if known."""
    for name in sorted(parent.hardware or {}):
        score = parent.hardware[name]
        best = score.get("best_params") if isinstance(score, dict) else getattr(score, "best_params", None)
        if isinstance(best, dict) and best:
            return dict(best)
    return {}
