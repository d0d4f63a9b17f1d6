"""Mutators: a parent kernel in, a proposed child out (the built-in operators, an LLM) (docs/llm.md).

Outside this package, use these names, not its modules:

* the contract of a mutation (``base``): :class:`MutationRequest`, :class:`ParentView`, :class:`Proposal`;
* the built-in mutator (``builtin``): :class:`BuiltinMutator` and its ``OPERATORS``;
* the LLM mutator: :class:`LLMMutator`, :func:`request_mode` (``llm``); :class:`LLMClient`,
  :class:`ModelSpec`, :func:`parse_model_specs`, :func:`configured_litellm` (litellm with the sim and
  replay providers registered) (``llm_client``); :class:`PromptRenderer` (``prompts``), :class:`PromptPool`
  (``metaprompt``); the draft prompt's :func:`example_entry` and ``MAX_DRAFT_FAILURES`` (``drafts``);
* routing over an LLM ensemble (``routing``): :class:`Router`, :class:`RoutingError`, ``POLICIES``;
* :func:`export_replay` (``replay``), :func:`plot_prompt_lineage` (``prompt_plot``).

Each is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import public_names

if TYPE_CHECKING:       # for type checkers, and for grimp's graph: the package depends on these modules
    from .base import MutationRequest, ParentView, Proposal
    from .builtin import OPERATORS, BuiltinMutator
    from .drafts import MAX_FAILURES as MAX_DRAFT_FAILURES
    from .drafts import example_entry
    from .llm import LLMMutator, request_mode
    from .llm_client import _litellm as configured_litellm
    from .llm_client import LLMClient, ModelSpec, parse_model_specs
    from .metaprompt import PromptPool
    from .prompt_plot import plot_prompt_lineage
    from .prompts import PromptRenderer
    from .replay import export_replay
    from .routing import POLICIES, Router, RoutingError

_EXPORTS = {
    "MutationRequest": "base", "ParentView": "base", "Proposal": "base",
    "BuiltinMutator": "builtin", "OPERATORS": "builtin",
    "LLMMutator": "llm", "request_mode": "llm",
    "LLMClient": "llm_client", "ModelSpec": "llm_client", "parse_model_specs": "llm_client",
    "configured_litellm": "llm_client:_litellm",
    "PromptRenderer": "prompts", "PromptPool": "metaprompt",
    "example_entry": "drafts", "MAX_DRAFT_FAILURES": "drafts:MAX_FAILURES",
    "Router": "routing", "RoutingError": "routing", "POLICIES": "routing",
    "export_replay": "replay", "plot_prompt_lineage": "prompt_plot",
}

__all__ = ["BuiltinMutator", "LLMClient", "LLMMutator", "MAX_DRAFT_FAILURES", "ModelSpec", "MutationRequest",
           "OPERATORS", "POLICIES", "ParentView", "PromptPool", "PromptRenderer", "Proposal", "Router",
           "RoutingError", "configured_litellm", "example_entry", "export_replay", "parse_model_specs",
           "plot_prompt_lineage", "request_mode"]

__getattr__, __dir__ = public_names(__name__, _EXPORTS, globals())
