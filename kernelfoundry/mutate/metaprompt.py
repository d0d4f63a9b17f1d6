"""Meta-prompt evolution: a bounded pool of prompt variants that co-evolve with the kernels.

A variant is a set of named sections (philosophy, strategies, pitfalls, analysis, ...)
rendered into the kernel writer's system prompt.  The driver samples a variant per
job, credits it when the child is scored, and every ``evolve_every`` credited uses
asks an LLM to rewrite the variant's sections (operators: improve, specialize,
generalize, simplify).  New variants are deduplicated; when the pool is full the
worst is retired (kept in the records for lineage, never sampled again).

Credit of one child = ``max(0, log(child / parent))`` for a scored child of a scored
parent, ``fix_credit`` for a passing child of a failed parent, 0 for a failed child.
A variant's credit is the mean over its credited children; sampling picks the
highest ``mean + exploration * sqrt(ln(total_uses + 1) / (uses + 1))`` (UCB1-style,
ties broken by the seeded RNG), so untried variants get tried and pending jobs
spread over variants.
"""

from __future__ import annotations

import math
import random
import re
import time
from pathlib import Path
from typing import Any

import yaml

from ..errors import UserError
from ..memory import child_gain  # noqa: F401  (the memory values prompt variants with it too)
from .prompts import DEFAULT_PROMPT_DIR, PromptRenderer

OPERATORS = ("improve", "specialize", "generalize", "simplify")
VARIANTS_FILE = "variants.yaml"
MAX_SECTION_CHARS = 2500
HISTORY_LEN = 12

_SECTION = re.compile(r"<section\s+name\s*=\s*[\"']?([A-Za-z_][\w-]*)[\"']?\s*>(.*?)</section\s*>",
                      re.DOTALL | re.IGNORECASE)


class PromptPoolError(UserError):
    """A variants file or stored prompt records are malformed."""


def load_seed_variants(prompt_dir: str | Path | None) -> list[dict[str, Any]]:
    """Seed variants from ``variants.yaml`` in *prompt_dir* (or the project's ``prompts/``)."""
    path = Path(prompt_dir) / VARIANTS_FILE if prompt_dir is not None else DEFAULT_PROMPT_DIR / VARIANTS_FILE
    if not path.is_file():
        path = DEFAULT_PROMPT_DIR / VARIANTS_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PromptPoolError(f"prompt variants file {path} cannot be read: {exc}") from None
    if not isinstance(data, list) or not data:
        raise PromptPoolError(f"prompt variants file {path} must be a non-empty list of "
                              "{name: ..., sections: {section_name: text}}.")
    out = []
    for i, item in enumerate(data):
        sections = item.get("sections") if isinstance(item, dict) else None
        if not isinstance(sections, dict) or not sections or not all(
                isinstance(k, str) and k.isidentifier() and isinstance(v, str) for k, v in sections.items()):
            raise PromptPoolError(f"prompt variants file {path}: entry {i} needs 'sections', a mapping of "
                                  "identifier -> text.")
        out.append({"name": str(item.get("name", f"seed{i}")), "sections": dict(sections)})
    return out


def parse_sections(text: str, allowed: list[str]) -> dict[str, str]:
    """``<section name="x">...</section>`` blocks of an LLM reply, restricted to *allowed* names."""
    found: dict[str, str] = {}
    for name, body in _SECTION.findall(text or ""):
        body = body.strip()
        if name in allowed and body:
            found[name] = body[:MAX_SECTION_CHARS]
    return found


def _dedupe_key(sections: dict[str, str]) -> str:
    return "\n".join(f"{k}:{' '.join(v.lower().split())}" for k, v in sorted(sections.items()))


class PromptPool:
    """Prompt variants with credit, UCB sampling and LLM-driven evolution (plain-dict records)."""

    def __init__(self, variants: list[dict[str, Any]], *, prompt_dir: str | Path | None = None, capacity: int = 16,
                 seed: int = 0, evolve_every: int = 4, exploration: float = 0.5, fix_credit: float = 0.5) -> None:
        if capacity < 1 or evolve_every < 1:
            raise ValueError("PromptPool needs capacity >= 1 and evolve_every >= 1")
        self.prompt_dir = None if prompt_dir is None else str(prompt_dir)
        self.capacity, self.evolve_every = int(capacity), int(evolve_every)
        self.exploration, self.fix_credit = float(exploration), float(fix_credit)
        self.rng = random.Random(seed)
        self.variants: dict[int, dict[str, Any]] = {}
        for v in variants:
            self.variants[int(v["id"])] = v
        self._renderer: PromptRenderer | None = None
        self._llm_log: list[dict[str, Any]] = []

    # -- construction -------------------------------------------------------------
    @classmethod
    def from_prompt_dir(cls, prompt_dir: str | Path | None = None, *, capacity: int = 16, seed: int = 0,
                        **kwargs) -> "PromptPool":
        """A fresh pool seeded from ``variants.yaml``."""
        now = time.time()
        variants = [_new_record(i, None, s["sections"], "seed", now, name=s["name"])
                    for i, s in enumerate(load_seed_variants(prompt_dir))]
        return cls(variants, prompt_dir=prompt_dir, capacity=capacity, seed=seed, **kwargs)

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], *, prompt_dir: str | Path | None = None,
                     capacity: int = 16, seed: int = 0, **kwargs) -> "PromptPool":
        """A pool restored from :meth:`to_records` output (e.g. the run store's prompts table)."""
        variants = []
        for i, rec in enumerate(records):
            if not isinstance(rec, dict) or "id" not in rec or not isinstance(rec.get("sections"), dict):
                raise PromptPoolError(f"stored prompt record {i} lacks 'id' or 'sections'.")
            v = _new_record(int(rec["id"]), rec.get("parent_id"), rec["sections"], rec.get("origin", "seed"),
                            float(rec.get("created_at", 0.0)), name=rec.get("name", ""))
            for key in ("uses", "credited", "credit_sum", "n_improved", "since_evolution", "evolutions"):
                v[key] = int(rec.get(key, 0)) if key != "credit_sum" else float(rec.get(key, 0.0))
            v["best_gain"] = float(rec.get("best_gain", 0.0))
            v["retired"] = bool(rec.get("retired", False))
            v["history"] = list(rec.get("history", []))[-HISTORY_LEN:]
            variants.append(v)
        if not variants:
            raise PromptPoolError("no stored prompt records to restore.")
        return cls(variants, prompt_dir=prompt_dir, capacity=capacity, seed=seed, **kwargs)

    def to_records(self) -> list[dict[str, Any]]:
        """Every variant (retired ones too), as JSON-able dicts with their statistics."""
        out = []
        for v in self.variants.values():
            rec = {k: (dict(val) if isinstance(val, dict) else list(val) if isinstance(val, list) else val)
                   for k, val in v.items()}
            rec["mean_credit"] = _mean(v)
            out.append(rec)
        return out

    # -- sampling and credit --------------------------------------------------------
    def active(self) -> list[dict[str, Any]]:
        return [v for v in self.variants.values() if not v["retired"]]

    def sample(self) -> dict[str, Any]:
        """The variant to use for the next job (UCB over active variants); counts one use."""
        active = self.active()
        total = sum(v["uses"] for v in active)
        scores = [_mean(v) + self.exploration * math.sqrt(math.log(total + 1) / (v["uses"] + 1)) for v in active]
        top = max(scores)
        chosen = self.rng.choice([v for v, s in zip(active, scores) if s >= top - 1e-12])
        chosen["uses"] += 1
        return {"id": chosen["id"], "parent_id": chosen["parent_id"], "origin": chosen["origin"],
                "sections": dict(chosen["sections"])}

    def credit(self, variant_id: Any, parent_objective: float | None, child_objective: float | None) -> float:
        """Record one scored child of a job that used *variant_id*; returns its gain (0 for unknown ids)."""
        v = self.variants.get(_as_id(variant_id))
        if v is None:
            return 0.0
        gain = child_gain(parent_objective, child_objective, self.fix_credit)
        v["credited"] += 1
        v["since_evolution"] += 1
        v["credit_sum"] += gain
        v["best_gain"] = max(v["best_gain"], gain)
        v["n_improved"] += int(gain > 0)
        v["history"] = (v["history"] + [{"parent": _fmt_obj(parent_objective, "unscored"),
                                         "child": _fmt_obj(child_objective, "failed"),
                                         "gain": round(gain, 4)}])[-HISTORY_LEN:]
        return gain

    def due_for_evolution(self) -> int | None:
        """An active variant with ``evolve_every`` credited uses since its last evolution (best credit first)."""
        due = [v for v in self.active() if v["since_evolution"] >= self.evolve_every]
        if not due:
            return None
        return max(due, key=lambda v: (_mean(v), -v["id"]))["id"]

    # -- evolution ----------------------------------------------------------------
    def evolve(self, variant_id: Any, feedback: list[dict[str, Any]], client, *, model=None,
               task=None, operator: str | None = None) -> dict[str, Any] | None:
        """Ask an LLM (through *client*, an ``LLMClient``) to rewrite a variant; the new variant or None.

        None when the call fails, the reply holds no usable section, or the result
        duplicates an existing variant; the LLM log records are kept for
        :meth:`drain_llm_log` either way.  Never raises for LLM failures.
        """
        from .llm_client import LLMCallError
        parent = self.variants.get(_as_id(variant_id))
        if parent is None:
            return None
        parent["since_evolution"] = 0
        parent["evolutions"] += 1
        operator = operator or self.rng.choice(OPERATORS)
        if operator not in OPERATORS:
            raise ValueError(f"unknown prompt operator {operator!r}; expected one of {OPERATORS}")
        if self._renderer is None:
            self._renderer = PromptRenderer(self.prompt_dir)
        view = dict(parent, mean_credit=_mean(parent))
        try:
            messages = self._renderer.prompt_mutation_messages(view, operator, list(feedback or [])[-8:],
                                                               parent["history"], task)
        except Exception as exc:  # noqa: BLE001 - a template failing here must not end the run
            self._llm_log.append({"purpose": "prompt_mutation", "messages": [], "response": None,
                                  "error": f"prompt_mutation template failed: {type(exc).__name__}: {exc}",
                                  "error_kind": "config", "timestamp": time.time(), "prompt_tokens": 0,
                                  "completion_tokens": 0, "cost_usd": 0.0, "attempt": 0, "model": None})
            return None
        if model is None and not getattr(client, "models", None):
            self._llm_log.append({"purpose": "prompt_mutation", "messages": messages, "response": None,
                                  "error": "the LLM client has no models configured", "error_kind": "config",
                                  "timestamp": time.time(), "prompt_tokens": 0, "completion_tokens": 0,
                                  "cost_usd": 0.0, "attempt": 0, "model": None})
            return None
        try:
            reply = client.complete(messages, model, purpose="prompt_mutation")
        except LLMCallError as exc:
            self._llm_log.extend(exc.attempts)
            return None
        self._llm_log.extend(reply.attempts)
        changed = parse_sections(reply.text, list(parent["sections"]))
        if not changed:
            reply.log_record["note"] = "reply held no <section name=...> block with a known section name"
            return None
        sections = {**parent["sections"], **changed}
        key = _dedupe_key(sections)
        if any(_dedupe_key(v["sections"]) == key for v in self.variants.values()):
            reply.log_record["note"] = "rewritten variant duplicates an existing one; dropped"
            return None
        new = _new_record(max(self.variants) + 1, parent["id"], sections, operator, time.time())
        self.variants[new["id"]] = new
        self._evict(keep=new["id"])
        return {"id": new["id"], "parent_id": new["parent_id"], "origin": operator, "sections": dict(sections)}

    def _evict(self, keep: int) -> None:
        """Retire the worst active variants until the pool fits its capacity."""
        while len(self.active()) > self.capacity:
            pool = [v for v in self.active() if v["id"] != keep]
            tried = [v for v in pool if v["credited"] >= 2]
            worst = min(tried or pool, key=lambda v: (_mean(v), v["id"]))
            worst["retired"] = True

    def drain_llm_log(self) -> list[dict[str, Any]]:
        """LLM log records of evolution calls since the last drain (the driver stores them)."""
        out, self._llm_log = self._llm_log, []
        return out

    # -- reporting --------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        credited = [_mean(v) for v in self.variants.values() if v["credited"]]
        return {"n_variants": len(self.active()),
                "n_evolved": sum(1 for v in self.variants.values() if v["origin"] != "seed"),
                "n_retired": sum(1 for v in self.variants.values() if v["retired"]),
                "best_credit": max(credited) if credited else 0.0}

    def lineage(self) -> list[tuple[int, int | None, float, int]]:
        """``(id, parent_id, mean credit, uses)`` for every variant, in creation order."""
        return [(v["id"], v["parent_id"], _mean(v), v["uses"]) for v in self.variants.values()]


def _new_record(vid: int, parent_id: int | None, sections: dict[str, str], origin: str, created_at: float,
                *, name: str = "") -> dict[str, Any]:
    return {"id": int(vid), "parent_id": None if parent_id is None else int(parent_id), "name": name,
            "sections": {str(k): str(v) for k, v in sections.items()}, "origin": origin,
            "created_at": created_at, "uses": 0, "credited": 0, "credit_sum": 0.0, "best_gain": 0.0,
            "n_improved": 0, "since_evolution": 0, "evolutions": 0, "retired": False, "history": []}


def _mean(v: dict[str, Any]) -> float:
    return v["credit_sum"] / v["credited"] if v["credited"] else 0.0


def _as_id(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _fmt_obj(x: float | None, missing: str) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) and math.isfinite(x) else missing
