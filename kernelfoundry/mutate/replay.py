"""The ``replay`` litellm provider: answers from a JSONL file of responses.

``--model replay/PATH`` routes requests through litellm's real completion path to
:class:`ReplayProvider` (registered in ``litellm.custom_provider_map``), which
answers from PATH, one JSON object per line::

    {"content": "...reply text..."}                      # the only required field
    {"content": "...", "cost_usd": 0.002}                 # charged as given (else 0)
    {"content": "...", "match": "prompt variant"}         # only for requests containing this text
    {"content": "...", "request_hash": "3f2a..."}         # recorded: the exact request it answered
    {"content": "...", "purpose": "prompt_mutation"}      # only for calls made for this purpose
    {"error": "rate_limit"}                               # scripted failure (see ERROR_KINDS)
    {"content": "...", "delay_s": 3}                      # slower than the timeout -> litellm.Timeout

Line selection, per process:

1. Candidates: the lines whose ``purpose`` is the call's (mutate, rewrite, fix,
   crossover, prompt_mutation; the client passes it in litellm's ``metadata``); if
   there are none, the lines without ``purpose``; if none, all lines.
2. An unused candidate whose ``request_hash`` equals the request's hash (a recorded
   run replays its own answers even if calls arrive in a different order).
3. Else the next candidate in file order, cycling at the end, among those whose
   ``match`` (a string or a list of strings, all required) occurs in the request or,
   when there is no such line, among those without ``match``.

So a hand-written file reserves lines for prompt evolution with ``"purpose":
"prompt_mutation"`` and leaves kernel replies unmarked.  Usage numbers are real token
counts of the prompt and the reply (litellm's default tokenizer) unless the line gives
``prompt_tokens`` / ``completion_tokens``.

Determinism: a recorded run replayed with the same seed and ONE worker reproduces the
same candidates, provided the verifier's numbers are reproducible too (prompts quote
them; a changed prompt misses its hash and falls back to file order per purpose).
With several workers, the order in which calls reach the provider varies between
runs; hash matching still answers each identical request with its recorded reply,
but requests that depend on earlier results may differ.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

PROVIDER = "replay"
#: litellm ``metadata`` key through which the client tells the provider a call's purpose.
PURPOSE_KEY = "kernelfoundry_purpose"

#: Scripted failures a line may request, and the litellm exception each raises.
ERROR_KINDS = ("rate_limit", "timeout", "server", "unavailable", "connection", "auth", "bad_request")


class ReplayError(ValueError):
    """A replay file is missing or malformed, or no line fits a request."""


def request_hash(messages: list[dict[str, Any]]) -> str:
    """A stable hash of a chat request's roles and contents."""
    canon = json.dumps([[m.get("role", ""), _content_text(m.get("content"))] for m in messages],
                       ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:24]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):       # OpenAI content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def load_replay_lines(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a replay JSONL file; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise ReplayError(f"replay file {path} does not exist (model 'replay/{path}').")
    lines: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ReplayError(f"replay file {path} is not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
    except OSError as exc:
        raise ReplayError(f"replay file {path} cannot be read: {exc.strerror or exc}.") from None
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ReplayError(f"replay file {path} line {n}: not JSON ({exc.msg}).") from None
        if not isinstance(obj, dict):
            raise ReplayError(f"replay file {path} line {n}: must be a JSON object with 'content'.")
        if "error" in obj:
            if obj["error"] not in ERROR_KINDS:
                raise ReplayError(f"replay file {path} line {n}: 'error' is {obj['error']!r}; "
                                  f"use one of {', '.join(ERROR_KINDS)}.")
        elif not isinstance(obj.get("content"), str):
            raise ReplayError(f"replay file {path} line {n}: needs a string 'content' (or an 'error').")
        match = obj.get("match")
        if match is not None and not (isinstance(match, str) or
                                      isinstance(match, list) and all(isinstance(m, str) for m in match)):
            raise ReplayError(f"replay file {path} line {n}: 'match' must be a string or a list of strings.")
        for key in ("purpose", "request_hash", "finish_reason"):
            if key in obj and not isinstance(obj[key], str):
                raise ReplayError(f"replay file {path} line {n}: '{key}' must be a string.")
        for key in ("cost_usd", "delay_s"):
            value = obj.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ReplayError(f"replay file {path} line {n}: '{key}' must be a finite number >= 0; "
                                  f"got {value!r}.")
        for key in ("prompt_tokens", "completion_tokens"):
            value = obj.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ReplayError(f"replay file {path} line {n}: '{key}' must be a whole number >= 0; "
                                  f"got {value!r}.")
        obj["_line"] = n
        lines.append(obj)
    if not lines:
        raise ReplayError(f"replay file {path} holds no responses.")
    return lines


@dataclass
class _ReplayFile:
    """One file's responses and this process's position in it."""

    lines: list[dict[str, Any]]
    version: tuple[int, int] | None = None
    cursors: dict[tuple[int, ...], int] = field(default_factory=dict)
    used: set[int] = field(default_factory=set)

    def select(self, messages: list[dict[str, Any]], path: str, purpose: str | None = None) -> dict[str, Any]:
        digest = request_hash(messages)
        text = "\n".join(_content_text(m.get("content")) for m in messages)
        tagged = [i for i, line in enumerate(self.lines) if purpose is not None and line.get("purpose") == purpose]
        lines = tagged or [i for i, line in enumerate(self.lines) if line.get("purpose") is None] \
            or list(range(len(self.lines)))
        pick = next((i for i in lines if i not in self.used and self.lines[i].get("request_hash") == digest),
                    None)
        if pick is None:            # file order; each set of eligible lines keeps its own position
            specific = [i for i in lines if self.lines[i].get("match") is not None and _matches(self.lines[i], text)]
            eligible = specific or [i for i in lines if self.lines[i].get("match") is None]
            if not eligible:
                raise ReplayError(f"replay file {path}: no line's 'match' occurs in this "
                                  f"{purpose or ''} request.")
            key = tuple(eligible)
            cursor = self.cursors.get(key, 0)
            # the next line in file order that no request used yet (a hash hit uses its line too);
            # once all are used, cycle
            pick = next((i for i in eligible if i >= cursor and i not in self.used), None)
            if pick is None:
                pick = next((i for i in eligible if i not in self.used), None)
            if pick is None:
                pick = next((i for i in eligible if i >= cursor), eligible[0])
            self.cursors[key] = pick + 1
        self.used.add(pick)
        return self.lines[pick]


def _matches(line: dict[str, Any], text: str) -> bool:
    match = line.get("match")
    if match is None:
        return True
    return all(m in text for m in ([match] if isinstance(match, str) else match))


_FILES: dict[str, _ReplayFile] = {}
_FILES_LOCK = threading.Lock()


def next_response(path: str, messages: list[dict[str, Any]], purpose: str | None = None) -> dict[str, Any]:
    """The response line for this request (thread-safe; the file is re-read only when it changes)."""
    key = str(Path(path).resolve())
    try:
        stat = os.stat(key)
        version = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        version = None
    with _FILES_LOCK:
        state = _FILES.get(key)
        if state is None or state.version != version:      # new, or edited since: start over
            state = _FILES[key] = _ReplayFile(load_replay_lines(key), version=version)
        return state.select(messages, path, purpose)


def reset_replay(path: str | Path | None = None) -> None:
    """Forget replay positions (all files, or one) so the next request starts at line 1."""
    with _FILES_LOCK:
        if path is None:
            _FILES.clear()
        else:
            _FILES.pop(str(Path(path).resolve()), None)


def export_replay(llm_log_records: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write LLM log records (as stored by the run store) as a replay JSONL; return the line count.

    Lines keep the records' order and carry ``request_hash`` so a replay matches each
    request to its recorded answer; failed attempts become scripted ``error`` lines
    (retryable kinds only; others are skipped since they were not retried).
    """
    out: list[str] = []
    for rec in llm_log_records:
        kind = rec.get("error_kind")
        line: dict[str, Any]
        if rec.get("error") and kind in ERROR_KINDS:
            line = {"error": kind}
        elif rec.get("error") and kind != "empty":
            continue
        else:
            line = {"content": rec.get("response") or ""}
            if rec.get("cost_usd"):
                line["cost_usd"] = float(rec["cost_usd"])
            for key in ("prompt_tokens", "completion_tokens"):
                if rec.get(key) is not None:
                    line[key] = int(rec[key])
        if rec.get("messages"):
            line["request_hash"] = request_hash(rec["messages"])
        for key in ("purpose", "model"):
            if rec.get(key):
                line[key] = rec[key]
        out.append(json.dumps(line, ensure_ascii=False))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(l + "\n" for l in out), encoding="utf-8")
    return len(out)


def _raise_scripted(kind: str, model: str, line: int) -> None:
    import litellm
    msg = f"scripted {kind} from replay line {line}"
    args = {"message": msg, "llm_provider": PROVIDER, "model": model}
    exc = {"rate_limit": litellm.RateLimitError, "timeout": litellm.Timeout,
           "server": litellm.InternalServerError, "unavailable": litellm.ServiceUnavailableError,
           "connection": litellm.APIConnectionError, "auth": litellm.AuthenticationError,
           "bad_request": litellm.BadRequestError}[kind]
    raise exc(**args)


_HANDLER = None


def replay_handler():
    """The process's :class:`ReplayProvider` instance (litellm imported on first use)."""
    global _HANDLER
    if _HANDLER is None:
        _HANDLER = _provider_class()()
    return _HANDLER


def register_replay_provider() -> None:
    """Add the ``replay`` provider to ``litellm.custom_provider_map`` (idempotent)."""
    register_custom_provider(PROVIDER, replay_handler)


def register_custom_provider(name: str, handler) -> bool:
    """Add provider *name* (its handler from ``handler()``) to litellm's custom providers; True if new."""
    import litellm
    new = not any(item.get("provider") == name for item in litellm.custom_provider_map)
    if new:
        litellm.custom_provider_map = [*litellm.custom_provider_map, {"provider": name, "custom_handler": handler()}]
    from litellm.utils import custom_llm_setup
    custom_llm_setup()
    return new


def _provider_class():
    from litellm import CustomLLM
    from litellm.types.utils import Usage
    import litellm

    class ReplayProvider(CustomLLM):
        """litellm custom provider answering from a replay file (see module docs)."""

        def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                       print_verbose, encoding, api_key, logging_obj, optional_params,
                       acompletion=None, litellm_params=None, logger_fn=None, headers=None,
                       timeout=None, client=None):
            try:
                purpose = ((litellm_params or {}).get("metadata") or {}).get(PURPOSE_KEY)
                line = next_response(model, messages, purpose)
            except ReplayError as exc:
                raise litellm.BadRequestError(message=str(exc), model=model, llm_provider=PROVIDER) from None
            delay = float(line.get("delay_s", 0.0))
            limit = _timeout_seconds(timeout)
            if delay:
                time.sleep(min(delay, limit) if limit else delay)
                if limit and delay > limit:
                    raise litellm.Timeout(message=f"replay line {line['_line']} took {delay}s > timeout {limit}s",
                                          model=model, llm_provider=PROVIDER)
            if "error" in line:
                _raise_scripted(line["error"], model, line["_line"])
            content = line["content"]
            prompt_tokens = line.get("prompt_tokens")
            if prompt_tokens is None:
                prompt_tokens = litellm.token_counter(messages=messages)
            completion_tokens = line.get("completion_tokens")
            if completion_tokens is None:
                completion_tokens = litellm.token_counter(text=content, count_response_tokens=True) if content else 0
            model_response.choices[0].message.content = content
            model_response.choices[0].finish_reason = line.get("finish_reason", "stop")
            model_response.model = f"{PROVIDER}/{model}"
            model_response.usage = Usage(prompt_tokens=int(prompt_tokens), completion_tokens=int(completion_tokens),
                                         total_tokens=int(prompt_tokens) + int(completion_tokens))
            model_response._hidden_params["response_cost"] = float(line.get("cost_usd", 0.0))
            return model_response

    return ReplayProvider


def _timeout_seconds(timeout) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, (int, float)):
        return float(timeout)
    read = getattr(timeout, "read", None)     # httpx.Timeout
    return float(read) if read else None
