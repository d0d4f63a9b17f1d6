"""Profiles of the simulated LLMs (``sim/NAME``): loading, validation, prices in litellm's map.

A profile is data: ``sim_profiles.yaml`` next to this module holds the bundled ones
(strong, fast, medium, perfect, broken); ``sim/PATH.yaml`` names a file holding one
profile.  Field meanings are documented in that YAML file and in docs/llm.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from ..errors import UserError

PROVIDER = "sim"
BUNDLED = Path(__file__).with_name("sim_profiles.yaml")
MODES = ("mutate", "rewrite", "fix", "crossover")
_FIELDS = ("description", "quality", "depth", "first_token_s", "tokens_per_s", "reasoning_tokens",
           "input_usd_per_mtok", "output_usd_per_mtok", "sleep", "time_scale")
_REQUIRED = ("quality", "first_token_s", "tokens_per_s", "input_usd_per_mtok", "output_usd_per_mtok")


class SimProfileError(UserError):
    """A sim profile is unknown or malformed (names the profile and field)."""


@dataclass(frozen=True)
class SimProfile:
    name: str
    quality: dict[str, float]                   # mode -> useful-edit rate ("default" for the rest)
    first_token_s: float
    tokens_per_s: float
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    depth: int = 1
    reasoning_tokens: int = 0
    sleep: bool = False
    time_scale: float = 1.0
    description: str = ""

    def quality_for(self, mode: str | None) -> float:
        return self.quality.get(mode or "", self.quality["default"])

    def latency(self, completion_tokens: int) -> float:
        """Seconds a reply of *completion_tokens* output tokens takes (virtual unless ``sleep``)."""
        return self.first_token_s + completion_tokens / self.tokens_per_s

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_usd_per_mtok + completion_tokens * self.output_usd_per_mtok) / 1e6


def _number(data: dict, key: str, where: str, *, lo: float, hi: float = math.inf, integer: bool = False,
            default: Any = None) -> Any:
    value = data.get(key, default)
    kind = "a whole number" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)) \
            or not (lo <= value <= hi) or not math.isfinite(value):
        bound = f"in [{lo:g}, {hi:g}]" if hi < math.inf else f">= {lo:g}"
        raise SimProfileError(f"{where}: field '{key}' must be {kind} {bound}; got {value!r}.")
    return value


def profile_from_mapping(name: str, data: Any, where: str) -> SimProfile:
    """A validated profile; errors name *where* and the field."""
    if not isinstance(data, dict):
        raise SimProfileError(f"{where}: a profile must be a mapping of fields ({', '.join(_FIELDS)}).")
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise SimProfileError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}; known: {', '.join(_FIELDS)}.")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise SimProfileError(f"{where}: missing field(s) {', '.join(missing)}.")
    q = data["quality"]
    if isinstance(q, dict):
        bad = sorted(set(q) - set(MODES) - {"default"})
        if bad:
            raise SimProfileError(f"{where}: field 'quality' has unknown request kind(s) {', '.join(map(str, bad))}; "
                                  f"use {', '.join(MODES)} or default.")
        quality = {k: float(_number(q, k, f"{where}, quality", lo=0.0, hi=1.0)) for k in q}
        quality.setdefault("default", 0.5)
    else:
        quality = {"default": float(_number(data, "quality", where, lo=0.0, hi=1.0))}
    sleep = data.get("sleep", False)
    if not isinstance(sleep, bool):
        raise SimProfileError(f"{where}: field 'sleep' must be true or false; got {sleep!r}.")
    tps = _number(data, "tokens_per_s", where, lo=0.0)
    if tps <= 0:
        raise SimProfileError(f"{where}: field 'tokens_per_s' must be a positive number; got {tps!r}.")
    return SimProfile(
        name=name, quality=quality, tokens_per_s=float(tps),
        first_token_s=float(_number(data, "first_token_s", where, lo=0.0)),
        input_usd_per_mtok=float(_number(data, "input_usd_per_mtok", where, lo=0.0)),
        output_usd_per_mtok=float(_number(data, "output_usd_per_mtok", where, lo=0.0)),
        depth=int(_number(data, "depth", where, lo=1, hi=4, integer=True, default=1)),
        reasoning_tokens=int(_number(data, "reasoning_tokens", where, lo=0, integer=True, default=0)),
        sleep=sleep, time_scale=float(_number(data, "time_scale", where, lo=0.0, default=1.0)),
        description=str(data.get("description", "")))


@lru_cache(maxsize=None)
def _bundled() -> dict[str, Any]:
    return yaml.safe_load(BUNDLED.read_text(encoding="utf-8")) or {}


def bundled_names() -> list[str]:
    return sorted(_bundled())


@lru_cache(maxsize=64)
def load_profile(name: str) -> SimProfile:
    """The profile of model ``sim/NAME``: a bundled name, or a path to a YAML file holding one profile."""
    if name.endswith((".yaml", ".yml")):
        path = Path(name)
        if not path.is_file():
            raise SimProfileError(f"sim profile file {path} does not exist (model 'sim/{name}').")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise SimProfileError(f"sim profile file {path} cannot be read as YAML: {exc}") from None
        return profile_from_mapping(name, data, f"sim profile file {path}")
    profiles = _bundled()
    if name not in profiles:
        raise SimProfileError(f"unknown sim profile {name!r} (model 'sim/{name}'); bundled profiles: "
                              f"{', '.join(bundled_names())}; or give sim/PATH.yaml.")
    return profile_from_mapping(name, profiles[name], f"sim profile {name!r} in {BUNDLED}")


def register_prices(litellm, names: list[str] | None = None) -> None:
    """Put the profiles' prices in litellm's price map, so ``completion_cost`` prices sim replies."""
    entries = {}
    for name in (bundled_names() if names is None else names):
        p = load_profile(name)
        entries[f"{PROVIDER}/{name}"] = {"input_cost_per_token": p.input_usd_per_mtok / 1e6,
                                         "output_cost_per_token": p.output_usd_per_mtok / 1e6,
                                         "litellm_provider": PROVIDER, "mode": "chat",
                                         "max_tokens": 65536, "max_input_tokens": 200000, "max_output_tokens": 65536,
                                         "cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0}
    missing = {k: v for k, v in entries.items() if k not in litellm.model_cost}
    if missing:
        litellm.register_model(missing)
