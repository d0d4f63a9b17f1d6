"""Traces and passed check runs of one kernel config, kept for the next candidate that differs only
in PARAMS.

Most edits of a search change PARAMS alone (a block size added, a list narrowed); the
trace, the verifier's costliest gate, was redone for every config of such a candidate.
What the trace child records for a config is a function of the code that runs, the
config, the launch hints, the task, the seed and the number of sampled programs: its
random draws are seeded per (seed, shape, config), never by what ran before.  The seed
ignores PARAMS values (:func:`candidate.verify_seed`), so a config traced for one
candidate is exactly what tracing it again for its PARAMS-only sibling gives.

The key therefore holds :func:`candidate.code_text` (the syntax tree with the PARAMS literal
blanked, every node's line and column kept, so the trace's line-numbered branch arms still
match) and the config with its value types, and
a candidate whose code could read its own PARAMS (``code_text`` is None) is never
cached.  Only complete, successful traces are stored: a failure or a timeout is traced
again.  A provisional trace (sparse plans only: docs/verifier.md, "Lazy dense traces") is stored
too and is replaced by the config's dense trace once the model picks it.  ``VERDICT_FORMAT`` is part of the key, so a verifier change invalidates it.

Check runs are kept the same way (``checks``): a config's planned runs, keyed by the code context
and the runs themselves (shapes, value profiles, call numbers, program-order seeds), once they all
passed; what is kept is what the confirm gate reads of them (branch arms, launched kernels).  A
PARAMS-only sibling (a hint added, a block size appended) runs only its new configs' checks.

SQLite in WAL mode (the run's workers share one file in the run directory), with an
in-memory dict in front; without a usable path (a worker on a node without the run
directory) it is the dict alone.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import zlib
from pathlib import Path
from typing import Any

from ...candidate import code_text
from ..verdict_cache import VERDICT_FORMAT, retry_while_locked

FILE_NAME = "traces.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (
    key TEXT PRIMARY KEY,
    traces BLOB NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS checks (
    key TEXT PRIMARY KEY,
    runs BLOB NOT NULL,
    created_at REAL NOT NULL
);
"""


def code_context(source: str, task: dict[str, Any], hints: dict[str, Any], seed: int,
                 trace_programs: int) -> str | None:
    """Everything but the config that a trace of *source* depends on, hashed; None: not cacheable."""
    code = code_text(source)
    if code is None:
        return None
    blob = json.dumps({"format": VERDICT_FORMAT, "code": code, "task": task, "hints": hints, "seed": int(seed),
                       "trace_programs": int(trace_programs)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:40]


class TraceCache:
    """``get``/``put`` the trace records (``ConfigTrace.to_dict()``, one per target shape) of one config."""

    def __init__(self, path: str | Path | None = None, *, max_memory_entries: int = 4096):
        self.memory: dict[str, list[dict[str, Any]]] = {}
        self.max_memory_entries = max_memory_entries
        self.conn = None
        self.hits = self.misses = 0
        if path is not None:
            path = Path(path)
            self.conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout=30000")
            # workers opening a new file together: the switch to WAL answers "locked" at once
            retry_while_locked(lambda: self.conn.execute("PRAGMA journal_mode=WAL"))
            retry_while_locked(lambda: self.conn.executescript(_SCHEMA))

    @staticmethod
    def key(context: str, config: dict[str, Any]) -> str:
        """Types kept: 1024 and "1024" are different configs (``config_key`` reads them alike)."""
        return f"{context}:" + json.dumps(sorted(config.items()), separators=(",", ":"))

    def _read(self, table: str, key: str) -> list[dict[str, Any]] | None:
        """*key*'s entry: from memory, else from *table* of the file (then remembered)."""
        found = self.memory.get(key)
        if found is None and self.conn is not None:
            column = {"traces": "traces", "checks": "runs"}[table]
            row = self.conn.execute(f"SELECT {column} FROM {table} WHERE key = ?", (key,)).fetchone()
            if row is not None:
                found = json.loads(zlib.decompress(row[0]))
                self._remember(key, found)
        return found

    def get(self, context: str, config: dict[str, Any]) -> list[dict[str, Any]] | None:
        found = self._read("traces", self.key(context, config))
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, context: str, config: dict[str, Any], traces: list[dict[str, Any]]) -> None:
        key = self.key(context, config)
        provisional = any(t.get("provisional") for t in traces)
        known = self.memory.get(key)
        if provisional and known is not None and not any(t.get("provisional") for t in known):
            return
        self._remember(key, traces)
        if self.conn is not None:
            blob = zlib.compress(json.dumps(traces, sort_keys=True).encode())
            # a dense trace replaces a provisional one; a provisional one never replaces anything
            verb = "IGNORE" if provisional else "REPLACE"
            self.conn.execute(f"INSERT OR {verb} INTO traces (key, traces, created_at) VALUES (?, ?, ?)",
                              (key, blob, time.time()))

    @staticmethod
    def checks_key(context: str, runs: list[dict[str, Any]]) -> str:
        """One config's planned check runs (shapes, profiles, call numbers, order seeds) in a code context."""
        plan = json.dumps(runs, sort_keys=True, separators=(",", ":"), default=str)
        return f"{context}:checks:" + hashlib.sha256(plan.encode()).hexdigest()[:40]

    def get_checks(self, key: str) -> list[dict[str, Any]] | None:
        """What the judge keeps of one config's passed check runs (their branch arms and launched kernels),
        or None: they were never run and passed in this context."""
        return self._read("checks", key)

    def put_checks(self, key: str, records: list[dict[str, Any]]) -> None:
        self._remember(key, records)
        if self.conn is not None:
            blob = zlib.compress(json.dumps(records, sort_keys=True).encode())
            self.conn.execute("INSERT OR IGNORE INTO checks (key, runs, created_at) VALUES (?, ?, ?)",
                              (key, blob, time.time()))

    def _remember(self, key: str, traces: list[dict[str, Any]]) -> None:
        if len(self.memory) >= self.max_memory_entries:
            self.memory.pop(next(iter(self.memory)))
        self.memory[key] = traces

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
