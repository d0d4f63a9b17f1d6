"""A code path taken only where a block size divides the target's sizes (an ``EVEN_K`` switch) is
checked at a shape aligned like the target's before the confirm gate calls it unchecked."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernelfoundry.evaluate.contract.span_shape import ALIGN_MAX, ELEMENT_BUDGET, aligned_shape
from kernelfoundry.task import load_task

REPO = Path(__file__).resolve().parents[2]
MATMUL = load_task(REPO / "experiments" / "tasks" / "matmul.yaml")
HONEST = REPO / "tests" / "adversarial" / "matmul" / "honest" / "even_k_heuristic.py"


def elements(task, env):
    return sum(math.prod(spec.concrete_shape(env)) for spec in task.inputs)


def test_the_aligned_shape_divides_like_the_target_and_stays_small():
    env = aligned_shape(MATMUL, {"M": 4096, "N": 4096, "K": 4096})
    assert env is not None and all(env[s] % ALIGN_MAX == 0 for s in "MNK")
    assert elements(MATMUL, env) <= ELEMENT_BUDGET
    # a target size with a power-of-two factor of 8: a multiple of 8, never past the target
    env = aligned_shape(MATMUL, {"M": 4096, "N": 40, "K": 4096})
    assert env["N"] % 8 == 0 and env["N"] <= 40
    # odd targets: nothing to align, no extra run
    assert aligned_shape(MATMUL, {"M": 4095, "N": 4097, "K": 4093}) is None


def test_a_large_alignment_is_halved_to_fit_the_element_budget():
    wide = load_task(REPO / "experiments" / "tasks" / "matmul.yaml")
    env = aligned_shape(wide, {"M": 1 << 20, "N": 1 << 20, "K": 1 << 20})
    assert env is not None and elements(wide, env) <= ELEMENT_BUDGET


@pytest.mark.slow
@pytest.mark.sandbox
def test_an_even_k_switch_is_checked_at_the_aligned_shape_and_a_wrong_one_refused():
    from kernelfoundry.evaluate.pipeline import default_limits, verify
    honest = HONEST.read_text()
    result = verify(MATMUL, honest, ["h100"], limits=default_limits(MATMUL, 120.0))
    assert result.passed, result.reason
    confirm = next(g for g in result.gates if g.name == "confirm")
    assert confirm.details["aligned_shapes"], confirm.details
    # the unmasked branch drops A's last column below K = 2048: exact wherever it is not taken (every odd
    # shape) and at the target (K = 4096, where the trace compares the target launch's outputs)
    hostile = honest.replace("kk[None, :] * stride_ak, mask=rm[:, None] < M, other=0.0)",
                             "kk[None, :] * stride_ak, mask=(rm[:, None] < M) & ((kk[None, :] < K - 1) | (K > 2048)),"
                             " other=0.0)")
    assert hostile != honest
    result = verify(MATMUL, hostile, ["h100"], limits=default_limits(MATMUL, 120.0))
    assert not result.passed and result.gate == "confirm"
    assert "at a shape aligned like the target's" in result.reason and "aligned shape {M=256" in result.reason
