"""The ``sim`` litellm provider: a simulated LLM that answers real prompts with real edits.

``--model sim/NAME`` sends requests through litellm's real completion path to
:class:`SimProvider` (registered in ``litellm.custom_provider_map`` like ``replay/``).
It finds the parent kernel in the prompt (the fenced code after ``## Current kernel``;
for crossover also ``## Second kernel``), and with probability ``quality`` (per request
kind) replies with a real edit: the built-in mutator's operators applied ``depth`` times,
written as SEARCH/REPLACE blocks (mutate, fix) or a full rewrite (rewrite, crossover).
Otherwise the edit is broken in one of three realistic ways: a SEARCH that is not in the
parent, a syntax error, or a kernel that parses and stores wrong values (it fails the
verifier's correctness gate).  Prompt-mutation requests get a changed guidance section.

Accounting is a real model's: token counts are litellm's tokenizer's (plus the profile's
hidden reasoning tokens), the price comes from litellm's price map (sim_profiles.py
registers it), and the latency ``first_token_s + tokens / tokens_per_s`` is reported in
the response's hidden params (``kernelfoundry_latency_s``); the client logs it as the
call's ``latency_s`` (virtual) and only sleeps it when the profile says ``sleep: true``.
Replies are deterministic in (model, request, how often this process saw the request).
"""

from __future__ import annotations

import difflib
import hashlib
import random
import re
import threading
import time
from typing import Any

from .sim_profiles import PROVIDER, SimProfile, load_profile, register_prices

#: hidden-params key through which the provider reports its (virtual) latency
LATENCY_KEY = "kernelfoundry_latency_s"
BROKEN_KINDS = ("wrong_search", "syntax", "semantic")

_PARENT = re.compile(r"## Current kernel \(candidate [^)]*\)\s*\n```python\n(.*?)\n```", re.S)
_PARTNER = re.compile(r"## Second kernel \(candidate [^)]*\)[^\n]*\n(?:- [^\n]*\n)*```python\n(.*?)\n```", re.S)
_FAILED = re.compile(r"Status: FAILED at the (\w+) gate")
_FEEDBACK = re.compile(r"Verifier feedback:\n(.*?)(?:\n## |\Z)", re.S)
_SECTION = re.compile(r'<section name="(\w+)">\n?(.*?)</section>', re.S)
_HALLUCINATED = ("    acc_tile = tl.dot(a_block, b_block, allow_tf32=USE_TF32)\n"
                 "    tl.debug_barrier()\n    acc_tile = acc_tile.to(OUT_DTYPE)")

_SEEN: dict[str, int] = {}
_SEEN_LOCK = threading.Lock()


def _text(messages: list[dict[str, Any]]) -> str:
    from .replay import _content_text
    return "\n".join(_content_text(m.get("content")) for m in messages)


def _rng(model: str, text: str) -> random.Random:
    digest = hashlib.sha256(f"{model}\n{text}".encode("utf-8")).hexdigest()[:24]
    with _SEEN_LOCK:
        n = _SEEN[digest] = _SEEN.get(digest, -1) + 1
    return random.Random(f"sim:{digest}:{n}")


def reset_sim() -> None:
    """Forget how often each request was seen (replies start over)."""
    with _SEEN_LOCK:
        _SEEN.clear()


# -- edits -------------------------------------------------------------------------
def _operator_edit(parent: str, mode: str, partner: str | None, gate: str | None, feedback: str, depth: int,
                   rng: random.Random) -> tuple[str, str] | None:
    """(child source, description) from the built-in operators, or None if none applies."""
    from .base import MutationRequest, ParentView
    from .builtin import BuiltinMutator
    kind = {"fix": "fix", "crossover": "crossover"}.get(mode, "mutate")
    source, notes = parent, []
    for step in range(depth):
        view = ParentView(id=0, source=source, passed=gate is None or step > 0, gate=None if step else gate,
                          feedback="" if step else feedback)
        inspirations = [ParentView(id=1, source=partner)] if kind == "crossover" and partner and not step else []
        k = kind if step == 0 else "mutate"
        if k == "crossover" and not inspirations:
            k = "mutate"
        proposal = BuiltinMutator(seed=rng.randrange(2**31)).propose(
            MutationRequest(task=None, parent=view, kind=k, inspirations=inspirations, seed=rng.randrange(2**31)))
        if proposal.source is None:
            if k == "fix":            # nothing to repair: a plain edit
                proposal = BuiltinMutator(seed=rng.randrange(2**31)).propose(
                    MutationRequest(task=None, parent=view, kind="mutate", seed=rng.randrange(2**31)))
            if proposal.source is None:
                break
        source = proposal.source
        notes.append(proposal.description)
    if source == parent:
        return None
    return source, "; ".join(notes)


def diff_blocks(parent: str, child: str) -> str:
    """SEARCH/REPLACE blocks turning *parent* into *child* (one per changed region, with context)."""
    a, b = parent.splitlines(), child.splitlines()
    out = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(1):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        while i2 - i1 < len(a) and "\n".join(a[i1:i2]) and parent.count("\n".join(a[i1:i2])) > 1:
            i1, j1 = max(0, i1 - 1), max(0, j1 - 1)           # widen until the SEARCH is unique
        if i1 == i2:                                          # pure insertion at the very start/end
            i1, j1 = (i1 - 1, j1 - 1) if i1 else (i1, j1)
            i2, j2 = (i2, j2) if i1 < i2 else (i2 + 1, j2 + 1)
        out.append("<<<<<<< SEARCH\n" + "\n".join(a[i1:i2]) + "\n=======\n" + "\n".join(b[j1:j2])
                   + "\n>>>>>>> REPLACE")
    return "\n\n".join(out)


def _break_syntax(source: str, rng: random.Random) -> str:
    lines = source.splitlines()
    spots = [i for i, line in enumerate(lines) if line.rstrip().endswith(")") and line.startswith("    ")]
    if not spots:
        return source + "\ndef launch(:\n"
    i = rng.choice(spots)
    lines[i] = lines[i].rstrip()[:-1]                      # drop the closing parenthesis
    return "\n".join(lines) + "\n"


def _break_semantics(source: str) -> str | None:
    """Scale the stored value of the first ``tl.store``: parses, runs, computes the wrong thing."""
    at = source.find("tl.store(")
    if at < 0:
        return None
    depth, i = 0, at + len("tl.store(")
    while i < len(source):
        ch = source[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            return source[:i + 1] + " 1.5 *" + source[i + 1:]
        i += 1
    return None


def _broken_reply(parent: str, child: str | None, mode: str, rng: random.Random) -> tuple[str, str]:
    """(reply, broken kind): a realistic failure."""
    kind = rng.choice(BROKEN_KINDS)
    base = child or parent
    if kind == "semantic":
        bad = _break_semantics(base)
        if bad is None or bad == parent:
            kind = "syntax"
    if kind == "syntax":
        bad = _break_syntax(base, rng)
    if kind == "wrong_search":
        return ("The accumulator should be cast once after the loop.\n\n<<<<<<< SEARCH\n" + _HALLUCINATED
                + "\n=======\n    acc_tile = tl.dot(a_block, b_block)\n>>>>>>> REPLACE\n"), kind
    return _format(parent, bad, mode, "Tightened the inner loop."), kind


def _format(parent: str, child: str, mode: str, note: str) -> str:
    if mode in ("rewrite", "crossover"):
        return f"{note}\n\n```python\n{child.rstrip()}\n```\n"
    return f"{note}\n\n{diff_blocks(parent, child)}\n"


def kernel_reply(text: str, mode: str, profile: SimProfile, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """The reply to a kernel prompt and what the simulator did (for the log)."""
    m = _PARENT.search(text)
    if not m:
        return "I could not find the current kernel in the request.", {"sim": "no_parent"}
    parent = m.group(1) + "\n"
    partner = _PARTNER.search(text)
    gate = _FAILED.search(text)
    fb = _FEEDBACK.search(text)
    useful = rng.random() < profile.quality_for(mode)
    edit = _operator_edit(parent, mode, partner.group(1) + "\n" if partner else None, gate.group(1) if gate else None,
                          fb.group(1).strip() if fb else "", profile.depth, rng)
    if useful and edit is not None:
        child, note = edit
        reply = _format(parent, child, mode, note[:400] or "Retuned the kernel.")
        from .edits import EditError, apply_reply
        try:
            apply_reply(parent, reply, prefer="rewrite" if mode in ("rewrite", "crossover") else "diff")
        except EditError:                                   # a diff the parser would misplace: send it whole
            reply = _format(parent, child, "rewrite", note[:400])
        return reply, {"sim": "edit"}
    reply, kind = _broken_reply(parent, edit[0] if edit else None, mode, rng)
    return reply, {"sim": f"broken:{kind}"}


def prompt_reply(text: str, rng: random.Random) -> str:
    """A prompt-mutation answer: one guidance section with one more line."""
    sections = _SECTION.findall(text)
    if not sections:
        return "Keep the guidance as it is."
    name, body = rng.choice(sections)
    tip = rng.choice(("Prefer one verifiable change per edit.", "Check masks whenever a block size changes.",
                      "Raise arithmetic intensity before tuning warps.", "Keep accumulators in fp32."))
    return f'<section name="{name}">\n{body.strip()}\n- {tip} (variant {rng.randrange(10**6)})\n</section>'


# -- the provider --------------------------------------------------------------------
_HANDLER = None


def sim_handler():
    global _HANDLER
    if _HANDLER is None:
        _HANDLER = _provider_class()()
    return _HANDLER


def register_sim_provider() -> None:
    """Add the ``sim`` provider to ``litellm.custom_provider_map`` and its prices to the map (idempotent)."""
    import litellm

    from .replay import register_custom_provider
    if register_custom_provider(PROVIDER, sim_handler):
        register_prices(litellm)


def _provider_class():
    import litellm
    from litellm import CustomLLM
    from litellm.types.utils import Usage

    from .replay import PURPOSE_KEY
    from .sim_profiles import SimProfileError

    class SimProvider(CustomLLM):
        """litellm custom provider simulating an LLM from a profile (see module docs)."""

        def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                       print_verbose, encoding, api_key, logging_obj, optional_params,
                       acompletion=None, litellm_params=None, logger_fn=None, headers=None,
                       timeout=None, client=None):
            try:
                profile = load_profile(model)
            except SimProfileError as exc:
                raise litellm.BadRequestError(message=str(exc), model=model, llm_provider=PROVIDER) from None
            register_prices(litellm, [model])
            purpose = ((litellm_params or {}).get("metadata") or {}).get(PURPOSE_KEY) or "mutate"
            text = _text(messages)
            rng = _rng(model, text)
            if purpose == "prompt_mutation":
                content, info = prompt_reply(text, rng), {"sim": "prompt"}
            else:
                content, info = kernel_reply(text, purpose, profile, rng)
            prompt_tokens = litellm.token_counter(messages=messages)
            completion_tokens = litellm.token_counter(text=content, count_response_tokens=True) \
                + profile.reasoning_tokens
            latency = profile.latency(completion_tokens)
            if profile.sleep:
                time.sleep(latency * profile.time_scale)
            model_response.choices[0].message.content = content
            model_response.choices[0].finish_reason = "stop"
            model_response.model = f"{PROVIDER}/{model}"
            model_response.usage = Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                                         total_tokens=prompt_tokens + completion_tokens)
            model_response._hidden_params[LATENCY_KEY] = latency
            model_response._hidden_params["kernelfoundry_sim"] = info["sim"]
            return model_response

    return SimProvider
