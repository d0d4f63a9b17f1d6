"""The built-in offline mutator: seeded AST edits of Triton kernel sources.

It needs no LLM and never runs candidate code.  For a request it draws operators
of the request's kind ("mutate", "crossover", "fix") by weight, without
replacement, and returns the first edit that applies and yields a valid, different
source; when none does, an error :class:`Proposal` lists why each was skipped.
Crossover of incompatible parents (different ``launch`` inputs) is refused; compatible
parents with nothing to combine get a mutation of the first parent instead.
When the request carries an ``operator_order`` (the driver's operator bandit, primed by the
experience memory), the operators it names are tried in that order first.
Operators and their bounds: ``docs/builtin_mutator.md``.
"""

from __future__ import annotations

import ast
import random
from typing import Sequence

from .ast_module import KernelModule, Skip
from .base import MutationRequest, Proposal
from .ops_base import Edit, OpContext, Operator, check_space
from . import (ops_crossover, ops_fuse, ops_fuse_reduce, ops_gemm_tiles, ops_online, ops_ordering, ops_params,
               ops_persistent, ops_repair, ops_rows, ops_split, ops_splitk, ops_tile2d, ops_variance, ops_vectorize,
               ops_wholerow)
from .ops_crossover import check_compatible

KINDS = ("mutate", "crossover", "fix")

#: Every built-in operator, in a fixed order (the draw order comes from the seed).
OPERATORS: tuple[Operator, ...] = (
    *ops_params.OPERATORS, *ops_ordering.OPERATORS, *ops_online.OPERATORS, *ops_rows.OPERATORS,
    *ops_persistent.OPERATORS, *ops_wholerow.OPERATORS, *ops_tile2d.OPERATORS, *ops_vectorize.OPERATORS,
    *ops_split.OPERATORS, *ops_variance.OPERATORS, *ops_fuse.OPERATORS, *ops_fuse_reduce.OPERATORS,
    *ops_splitk.OPERATORS, *ops_gemm_tiles.OPERATORS, *ops_crossover.OPERATORS, *ops_repair.OPERATORS,
)


def _draw_order(ops: list[Operator], rng: random.Random) -> list[Operator]:
    """Weighted sampling without replacement."""
    pool, order = list(ops), []
    while pool:
        pick = rng.choices(pool, weights=[op.weight for op in pool])[0]
        order.append(pick)
        pool.remove(pick)
    return order


def _valid(edit: Edit, module: KernelModule, others: Sequence[KernelModule]) -> str:
    """The edited source, checked: it parses, PARAMS is valid and bounded, and it differs."""
    source = module.render(edit.tree)
    try:
        new = KernelModule.parse(source)
    except Skip as exc:
        raise Skip(f"edit produced an invalid candidate: {exc}") from None
    check_space(new.space)
    dump = ast.dump(new.tree)
    if any(dump == ast.dump(m.tree) for m in (module, *others)):
        raise Skip("edit left the source unchanged")
    return source


class BuiltinMutator:
    """Seeded AST mutator; deterministic for a given (constructor seed, request seed, kind)."""

    name = "builtin"

    def __init__(self, *, seed: int = 0, operators: Sequence[Operator] | None = None):
        self.seed = seed
        self.operators = tuple(OPERATORS if operators is None else operators)

    def propose(self, request: MutationRequest) -> Proposal:
        parent = request.parent
        kind = request.kind
        parent_ids: tuple[int, ...] = (parent.id,)
        if kind not in KINDS:
            return self._error(f"unknown request kind {kind!r}; expected one of {', '.join(KINDS)}", parent_ids)
        try:
            module = KernelModule.parse(parent.source)
        except Skip as exc:
            return self._error(f"parent #{parent.id} cannot be edited: {exc}", parent_ids)
        other = None
        if kind == "crossover":
            if not request.inspirations:
                return self._error("crossover needs an inspiration (the second parent)", parent_ids)
            mate = request.inspirations[0]
            parent_ids = (parent.id, mate.id)
            try:
                other = KernelModule.parse(mate.source)
            except Skip as exc:
                return self._error(f"inspiration #{mate.id} cannot be edited: {exc}", parent_ids)
            try:
                check_compatible(module, other)
            except Skip as exc:
                return self._error(str(exc), parent_ids)
        rng = random.Random(f"builtin:{self.seed}:{request.seed}:{kind}")
        proposal, skipped = self._first_edit(kind, module, other, request, rng, parent_ids)
        if proposal is None and kind == "crossover":
            # Compatible parents with nothing to combine (e.g. a parent and its own child):
            # mutate the parent instead of wasting the slot, and say so.
            proposal, more = self._first_edit("mutate", module, None, request, rng, (parent.id,))
            skipped += more
            if proposal is not None:
                proposal.description = f"crossover had nothing to combine; {proposal.description}"
        if proposal is not None:
            return proposal
        if not skipped:
            return self._error(f"no built-in operator of kind {kind!r}", parent_ids)
        return self._error(f"no built-in {kind} operator applies: " + "; ".join(skipped), parent_ids)

    def _first_edit(self, kind: str, module: KernelModule, other: KernelModule | None,
                    request: MutationRequest, rng: random.Random,
                    parent_ids: tuple[int, ...]) -> tuple[Proposal | None, list[str]]:
        """The first operator of *kind* (in seeded weighted order) that yields a valid edit."""
        ops = _draw_order([op for op in self.operators if op.kind == kind], rng)
        if request.operator_order:          # the driver's bandit ranked them (kernelfoundry/memory/bandit.py)
            rank = {name: i for i, name in enumerate(request.operator_order)}
            ops.sort(key=lambda op: rank.get(op.name, len(rank)))
        skipped = []
        for op in ops:
            ctx = OpContext(module=module, rng=random.Random(rng.getrandbits(64)), parent=request.parent,
                            task=request.task, other=other,
                            other_view=request.inspirations[0] if other is not None else None)
            try:
                edit = op.apply(ctx)
                source = _valid(edit, module, [other] if other is not None else [])
            except Skip as exc:
                skipped.append(f"{op.name}: {exc}")
                continue
            except Exception as exc:   # an operator bug must not kill the worker
                skipped.append(f"{op.name}: internal error {type(exc).__name__}: {exc}")
                continue
            return Proposal(source=source, mutator=f"builtin:{op.name}", description=edit.description,
                            parent_ids=parent_ids), skipped
        return None, skipped

    @staticmethod
    def _error(message: str, parent_ids: tuple[int, ...]) -> Proposal:
        return Proposal(source=None, mutator="builtin", error=message, parent_ids=parent_ids)
