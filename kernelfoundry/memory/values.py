"""Stages and rewards of experiences: the two values of EvoKernel's memory.

Stage 1 ("draft"): the parent is not a correct kernel (a failed candidate to fix, or a
seed).  Its reward is 1 when the child is correct, else 0, so Q1 is the probability that
the action yields a correct kernel.  Stage 2 ("refine"): the parent is correct; the reward
is the child's log speedup over the parent, clipped to [-0.5, 0.5], and a failed child
costs FAILED_REFINE (the slot was wasted), so Q2 is the expected gain of the action.
Values are Monte-Carlo means of these rewards (store.q_values keeps the sums).
"""

from __future__ import annotations

import math

DRAFT, REFINE = 1, 2
STAGE_NAMES = {DRAFT: "draft (Q1: reach a correct kernel)", REFINE: "refine (Q2: make a correct kernel faster)"}
GAIN_CLIP = 0.5
FAILED_REFINE = -0.1


def _ok(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def stage_of(parent_passed: bool | None, request_kind: str) -> int:
    """Stage 1 for fixes, seeds and children of failed parents; stage 2 otherwise."""
    if request_kind in ("fix", "seed") or not parent_passed:
        return DRAFT
    return REFINE


def gain_of(parent_objective: float | None, child_objective: float | None) -> float | None:
    """log(child / parent) when both are scored, else None."""
    if _ok(parent_objective) and _ok(child_objective):
        return math.log(child_objective / parent_objective)
    return None


def reward_of(stage: int, passed: bool, parent_objective: float | None, child_objective: float | None) -> float:
    if stage == DRAFT:
        return 1.0 if passed and _ok(child_objective) else 0.0
    if not passed or not _ok(child_objective):
        return FAILED_REFINE
    gain = gain_of(parent_objective, child_objective)
    return 0.0 if gain is None else max(-GAIN_CLIP, min(GAIN_CLIP, gain))


def child_gain(parent_objective: float | None, child_objective: float | None, fix_credit: float) -> float:
    """A prompt variant's credit for one child: the child's log speedup over its parent, never below 0;
    *fix_credit* for a correct child of a failed parent; 0 for a failed child.  The prompt pool
    (mutate/metaprompt.py, whose docstring explains it) and the memory value prompt variants with it."""
    def ok(x):
        return isinstance(x, (int, float)) and math.isfinite(x) and x > 0
    if not ok(child_objective):
        return 0.0
    if not ok(parent_objective):
        return fix_credit
    return max(0.0, math.log(child_objective / parent_objective))
