"""One chat completion through litellm: model specs, retries, concurrency, tokens and cost.

``LITELLM_LOCAL_MODEL_COST_MAP`` is set before litellm is imported (lazily, on the
first call) so its bundled price map is used and nothing is fetched at run time.

Retries: rate limits, timeouts, connection and server errors (5xx) and empty
replies are retried with exponential backoff and jitter; authentication and
bad-request errors are not.  Every attempt, failed or not, becomes one log record
(see :data:`LOG_FIELDS`), which the run store keeps and :func:`replay.export_replay`
turns back into a replay file.

Cost: ``litellm.completion_cost`` prices each reply; a model it has no price for
(a local server, an unknown name) costs 0 and its records say so in ``cost_note``.
A search enforces ``--max-cost`` with its own accounting (``RunStats.cost_usd``, fed by
every proposal's usage and every prompt-evolution call); a :class:`CostBudget` given
to a client used elsewhere stops that client's calls once spent.
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import UserError
from .base import LLMUsage

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

#: Keys of one LLM log record.
LOG_FIELDS = ("model", "purpose", "messages", "response", "prompt_tokens", "completion_tokens",
              "cost_usd", "cost_note", "latency_s", "error", "error_kind", "attempt", "timestamp",
              "temperature", "max_tokens")

#: Error kinds worth another attempt.
RETRYABLE = frozenset({"rate_limit", "timeout", "server", "unavailable", "connection", "empty"})

_MODEL_KEYS = ("name", "weight", "temperature", "max_tokens", "api_base", "api_key_env")


class ModelSpecError(UserError):
    """A model entry (task file ``models`` or ``--model``) is malformed."""


@dataclass(frozen=True)
class ModelSpec:
    """One model of the ensemble, as litellm names it (``openai/gpt-4o``, ``ollama/qwen2.5-coder``, ``replay/PATH``)."""

    name: str
    weight: float = 1.0
    temperature: float = 0.7
    max_tokens: int = 8192
    api_base: str | None = None
    api_key_env: str | None = None

    to_dict = asdict

    @property
    def provider(self) -> str:
        return self.name.split("/", 1)[0] if "/" in self.name else ""


def parse_model_specs(task_models: Any, cli_models: list[str] | None = None) -> list[ModelSpec]:
    """Models from ``--model`` (if any were given) or else the task file's ``models``.

    A ``--model`` value is ``NAME[,key=value...]``, e.g. ``openai/gpt-4o,weight=2,temperature=0.3``;
    a task entry is a name or a mapping with the :class:`ModelSpec` fields.  Replay paths
    become absolute (workers may run elsewhere) and must exist.
    """
    specs: list[ModelSpec] = []
    if cli_models:
        for i, text in enumerate(cli_models):
            specs.append(_spec_from_mapping(_parse_cli_model(text, i), f"--model {text!r}"))
    else:
        if task_models is None:
            task_models = []
        if not isinstance(task_models, (list, tuple)):
            raise ModelSpecError("task field 'models' must be a list of model names or mappings with 'name'.")
        for i, entry in enumerate(task_models):
            data = {"name": entry} if isinstance(entry, str) else entry
            if not isinstance(data, dict):
                raise ModelSpecError(f"task field 'models[{i}]' must be a model name or a mapping with 'name'; "
                                     f"got {entry!r}.")
            specs.append(_spec_from_mapping(data, f"task field 'models[{i}]'"))
    return specs


def _parse_cli_model(text: str, index: int) -> dict[str, Any]:
    name, *options = [part.strip() for part in text.split(",")]
    data: dict[str, Any] = {"name": name}
    for opt in options:
        key, sep, value = opt.partition("=")
        if not sep:
            raise ModelSpecError(f"--model {text!r}: option {opt!r} must be key=value "
                                 f"(keys: {', '.join(_MODEL_KEYS[1:])}).")
        data[key.strip()] = value.strip()
    return data


def _spec_from_mapping(data: dict[str, Any], where: str) -> ModelSpec:
    unknown = sorted(set(data) - set(_MODEL_KEYS))
    if unknown:
        raise ModelSpecError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_MODEL_KEYS)}.")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ModelSpecError(f"{where}: 'name' must be a litellm model name such as openai/gpt-4o or replay/PATH.")
    name = name.strip()

    def number(key: str, cast, default, ok: Callable[[Any], bool], rule: str):
        value = data.get(key, default)
        try:
            value = cast(value)
        except (TypeError, ValueError):
            raise ModelSpecError(f"{where}: '{key}' must be {rule}; got {data.get(key)!r}.") from None
        if isinstance(data.get(key), bool) or not ok(value):
            raise ModelSpecError(f"{where}: '{key}' must be {rule}; got {data.get(key)!r}.")
        return value

    weight = number("weight", float, 1.0, lambda v: math.isfinite(v) and v > 0, "a positive number")
    temperature = number("temperature", float, 0.7, lambda v: 0 <= v <= 2, "a number in [0, 2]")
    max_tokens = number("max_tokens", int, 8192, lambda v: v > 0, "a positive integer")
    api_base = data.get("api_base")
    if api_base is not None and (not isinstance(api_base, str) or "://" not in api_base):
        raise ModelSpecError(f"{where}: 'api_base' must be a URL such as http://localhost:11434; got {api_base!r}.")
    key_env = data.get("api_key_env")
    if key_env is not None:
        if not isinstance(key_env, str) or not key_env.isidentifier():
            raise ModelSpecError(f"{where}: 'api_key_env' must name an environment variable; got {key_env!r}.")
        if key_env not in os.environ:
            raise ModelSpecError(f"{where}: 'api_key_env' names {key_env}, which is not set in the environment.")
    if name.startswith("replay/"):
        from .replay import ReplayError, load_replay_lines
        path = Path(name[len("replay/"):]).expanduser().resolve()
        try:
            load_replay_lines(path)
        except ReplayError as exc:
            raise ModelSpecError(f"{where}: {exc}") from None
        name = f"replay/{path}"
    elif name.startswith("sim/"):
        from .sim_profiles import SimProfileError, load_profile
        profile = name[len("sim/"):]
        if profile.endswith((".yaml", ".yml")):
            profile = str(Path(profile).expanduser().resolve())
        try:
            load_profile(profile)
        except SimProfileError as exc:
            raise ModelSpecError(f"{where}: {exc}") from None
        name = f"sim/{profile}"
    else:
        _check_provider(name, api_base, where)
    return ModelSpec(name=name, weight=weight, temperature=temperature, max_tokens=max_tokens,
                     api_base=api_base, api_key_env=key_env)


def _check_provider(name: str, api_base: str | None, where: str) -> None:
    """Refuse a model litellm cannot route (``opnai/gpt-4o``, ``gpt4o``): offline, no call is made."""
    import contextlib
    import io

    import litellm
    try:
        with contextlib.redirect_stdout(io.StringIO()):        # litellm prints a provider list
            litellm.get_llm_provider(name, api_base=api_base)
    except Exception:  # noqa: BLE001 - litellm raises its BadRequestError for an unknown provider
        raise ModelSpecError(f"{where}: litellm knows no provider for {name!r}; name it as provider/model, "
                             "e.g. openai/gpt-4o, anthropic/claude-sonnet-4-5, ollama/llama3 "
                             "(https://docs.litellm.ai/docs/providers), or replay/PATH.jsonl.") from None


def choose_model(models: list[ModelSpec], rng: random.Random) -> ModelSpec:
    """A model drawn by weight."""
    if not models:
        raise ValueError("no models configured")
    return rng.choices(models, weights=[m.weight for m in models], k=1)[0]


class CostBudget:
    """Money the run may spend on LLM calls; the driver owns it (``limit=None``: unlimited)."""

    def __init__(self, limit: float | None = None) -> None:
        if limit is not None and not (isinstance(limit, (int, float)) and limit >= 0):
            raise UserError(f"--max-cost must be a non-negative number of US dollars; got {limit!r}.")
        self.limit = None if limit is None else float(limit)
        self.spent = 0.0
        self._lock = threading.Lock()

    def charge(self, cost_usd: float) -> None:
        with self._lock:
            self.spent += float(cost_usd or 0.0)

    def exhausted(self) -> bool:
        return self.limit is not None and self.spent >= self.limit

    def remaining(self) -> float | None:
        return None if self.limit is None else max(0.0, self.limit - self.spent)

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "spent": self.spent, "exhausted": self.exhausted()}


@dataclass
class LLMReply:
    """A successful completion: its text, usage over all attempts, and the log records."""

    text: str
    usage: LLMUsage
    log_record: dict[str, Any]                                    # the successful attempt
    attempts: list[dict[str, Any]] = field(default_factory=list)  # every attempt, in order (ends with log_record)


class LLMCallError(RuntimeError):
    """Every attempt failed, or the error was not retryable, or the budget is spent."""

    def __init__(self, message: str, attempts: list[dict[str, Any]], usage: LLMUsage) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.usage = usage


_SEMAPHORES: dict[int, threading.BoundedSemaphore] = {}
_SEMAPHORES_LOCK = threading.Lock()


def _process_semaphore(limit: int) -> threading.BoundedSemaphore:
    """One semaphore per limit per process: all clients in a worker share it."""
    with _SEMAPHORES_LOCK:
        if limit not in _SEMAPHORES:
            _SEMAPHORES[limit] = threading.BoundedSemaphore(limit)
        return _SEMAPHORES[limit]


def _litellm():
    import litellm
    from .replay import register_replay_provider
    from .sim import register_sim_provider
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    register_replay_provider()
    register_sim_provider()
    return litellm


def classify_error(exc: BaseException) -> str:
    """A short kind for a litellm exception: rate_limit, timeout, server, auth, bad_request, ..."""
    litellm = _litellm()
    table = ((litellm.RateLimitError, "rate_limit"), (litellm.Timeout, "timeout"),
             (litellm.AuthenticationError, "auth"), (litellm.PermissionDeniedError, "auth"),
             (litellm.ContextWindowExceededError, "context_window"), (litellm.NotFoundError, "not_found"),
             (litellm.BadRequestError, "bad_request"), (litellm.ServiceUnavailableError, "unavailable"),
             (litellm.BadGatewayError, "server"), (litellm.InternalServerError, "server"),
             (litellm.APIConnectionError, "connection"))
    for cls, kind in table:
        if isinstance(exc, cls):
            return kind
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return "server"
    return "other"


class LLMClient:
    """Chat completions with retries, a per-process concurrency limit and accounting."""

    def __init__(self, *, timeout_s: float = 120.0, max_retries: int = 4, backoff_s: float = 2.0,
                 max_backoff_s: float = 60.0, max_concurrency: int = 4, budget: CostBudget | None = None,
                 models: list[ModelSpec] | None = None, seed: int = 0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if max_retries < 0 or max_concurrency < 1 or timeout_s <= 0:
            raise ValueError("LLMClient needs max_retries >= 0, max_concurrency >= 1 and timeout_s > 0")
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.max_concurrency = int(max_concurrency)
        self.budget = budget
        self.models = list(models or [])
        self._rng = random.Random(seed)
        self._sleep = sleep

    def complete(self, messages: list[dict[str, Any]], model: ModelSpec | None = None, *,
                 purpose: str = "mutation") -> LLMReply:
        """One reply for *messages* from *model* (default: drawn from ``self.models`` by weight).

        Raises :class:`LLMCallError` (carrying every attempt's log record) on failure.
        """
        if model is None:
            model = choose_model(self.models, self._rng)
        litellm = _litellm()
        attempts: list[dict[str, Any]] = []
        usage = LLMUsage()
        for attempt in range(1, self.max_retries + 2):
            if self.budget is not None and self.budget.exhausted():
                raise LLMCallError(f"cost budget exhausted (spent ${self.budget.spent:.4f} of "
                                   f"${self.budget.limit:.4f}); no LLM call made", attempts, usage)
            record = self._attempt(litellm, messages, model, attempt, purpose)
            attempts.append(record)
            usage.add(LLMUsage(calls=1, prompt_tokens=record["prompt_tokens"],
                               completion_tokens=record["completion_tokens"], cost_usd=record["cost_usd"],
                               latency_s=record["latency_s"]))
            if self.budget is not None:
                self.budget.charge(record["cost_usd"])
            if record["error"] is None:
                return LLMReply(text=record["response"], usage=usage, log_record=record, attempts=attempts)
            if record["error_kind"] not in RETRYABLE:
                raise LLMCallError(f"LLM call to {model.name} failed ({record['error_kind']}, not retried): "
                                   f"{record['error']}", attempts, usage)
            if attempt <= self.max_retries:
                self._sleep(self._backoff(attempt))
        raise LLMCallError(f"LLM call to {model.name} failed after {len(attempts)} attempts; "
                           f"last error ({attempts[-1]['error_kind']}): {attempts[-1]['error']}", attempts, usage)

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with +-50% jitter, capped."""
        return min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)) * self._rng.uniform(0.5, 1.5)

    def _attempt(self, litellm, messages, model: ModelSpec, attempt: int, purpose: str) -> dict[str, Any]:
        record: dict[str, Any] = {
            "model": model.name, "purpose": purpose, "messages": messages, "response": None,
            "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "cost_note": None,
            "latency_s": 0.0, "error": None, "error_kind": None, "attempt": attempt,
            "timestamp": time.time(), "temperature": model.temperature, "max_tokens": model.max_tokens}
        kwargs: dict[str, Any] = {"model": model.name, "messages": messages, "temperature": model.temperature,
                                  "max_tokens": model.max_tokens, "timeout": self.timeout_s, "num_retries": 0}
        if model.api_base:
            kwargs["api_base"] = model.api_base
        if model.api_key_env:
            kwargs["api_key"] = os.environ.get(model.api_key_env, "")
        if model.provider in ("replay", "sim"):
            from .replay import PURPOSE_KEY
            kwargs["metadata"] = {PURPOSE_KEY: purpose}
        start = time.monotonic()
        with _process_semaphore(self.max_concurrency):
            try:
                response = litellm.completion(**kwargs)
            except Exception as exc:     # every provider error becomes a log record
                record.update(latency_s=time.monotonic() - start, error=f"{type(exc).__name__}: {exc}"[:2000],
                              error_kind=classify_error(exc))
                return record
        record["latency_s"] = time.monotonic() - start
        hidden = getattr(response, "_hidden_params", None) or {}
        if hidden.get("kernelfoundry_latency_s") is not None:   # a sim model: its profile's latency, not ours
            record.update(latency_s=float(hidden["kernelfoundry_latency_s"]), latency_note="virtual (sim profile)",
                          sim=hidden.get("kernelfoundry_sim"))
        text = _reply_text(response)
        u = getattr(response, "usage", None)
        record["prompt_tokens"] = int(getattr(u, "prompt_tokens", 0) or 0)
        record["completion_tokens"] = int(getattr(u, "completion_tokens", 0) or 0)
        record["cost_usd"], record["cost_note"] = _cost(litellm, response, model)
        record["response"] = text
        record["finish_reason"] = finish = _finish_reason(response)
        if not text.strip():
            if finish == "length":      # retrying with the same max_tokens would pay for the same cut
                record.update(error=f"empty reply: the model spent all max_tokens={model.max_tokens} "
                                    "(finish_reason=length); raise max_tokens for this model",
                              error_kind="truncated")
            else:
                record.update(error=f"empty reply (finish_reason={finish})", error_kind="empty")
        return record


def _reply_text(response) -> str:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError):
        return ""
    if not isinstance(content, str):
        return ""
    # lone surrogates (a model's broken emoji) cannot be stored as UTF-8: replace them once, here
    return content.encode("utf-8", "replace").decode("utf-8")


def _finish_reason(response) -> str | None:
    try:
        return response.choices[0].finish_reason
    except (AttributeError, IndexError):
        return None


def _cost(litellm, response, model: ModelSpec) -> tuple[float, str | None]:
    """(USD, note): the replay provider's own figure, else litellm's price map, else 0 with a note."""
    if model.provider == "replay":
        hidden = getattr(response, "_hidden_params", None) or {}
        return float(hidden.get("response_cost") or 0.0), "replay: cost_usd from the replay line (0 if absent)"
    try:
        cost = float(litellm.completion_cost(completion_response=response, model=model.name))
    except Exception as exc:       # litellm raises for models missing from its price map
        return 0.0, f"no price for {model.name} in litellm's cost map ({type(exc).__name__}); counted as $0"
    if not math.isfinite(cost) or cost < 0:
        return 0.0, f"litellm returned an unusable cost {cost!r} for {model.name}; counted as $0"
    return cost, None
