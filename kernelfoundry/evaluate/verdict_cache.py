"""A verdict cache shared by the runs of a benchmark: the same source on the same task is verified once.

A verdict is a pure function of (task, hardware, verifier options, source): the
verifier's seed comes from the source itself (:func:`candidate.verify_seed`).  So
when ``bench`` runs several methods and seeds on one task, a kernel that two runs
both propose (the seed's first mutations, mostly) is verified by the first and
read back by the second.  Verdicts that depend on the machine's load rather than
on the source (the sandbox's wall limit, a worker that died) are never stored.

SQLite in WAL mode: several Ray workers read and write it at once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from ..candidate import source_hash

#: Bump when a change to the verifier or the performance model alters verdicts.
VERDICT_FORMAT = 26

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    result TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


def context_key(task: dict[str, Any], hardware: list[str], options: dict[str, Any]) -> str:
    """Everything besides the source that a verdict depends on, as one hash."""
    blob = json.dumps({"format": VERDICT_FORMAT, "task": task, "hardware": list(hardware),
                       "options": options}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def cacheable(result: dict[str, Any]) -> bool:
    """Only verdicts that follow from the source: not timeouts, kills or infrastructure failures."""
    if result.get("passed"):
        return True
    if result.get("gate") not in ("hack", "load", "correctness", "trace", "model"):
        return False
    failed = next((g for g in result.get("gates", []) if not g.get("passed")), {})
    text = (result.get("reason", "") + " " + failed.get("reason", "")).lower()
    return not any(word in text for word in ("did not finish within", "timed out", "the candidate's process",
                                              "killed", "memory"))


def retry_while_locked(step, seconds: float = 60.0) -> None:
    """Run *step*, retrying while SQLite reports the database locked.

    Switching to WAL needs an exclusive lock and SQLite answers "database is locked"
    at once, without its busy handler, when workers open one new cache together.
    """
    deadline = time.monotonic() + seconds
    delay = 0.01
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


class VerdictCache:
    """``get``/``put`` verifier results (``VerifyResult.to_dict()``) by context and source."""

    def __init__(self, path: str | Path, context: str):
        self.path = Path(path)
        self.context = context
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
        self.conn.execute("PRAGMA busy_timeout=30000")
        retry_while_locked(lambda: self.conn.execute("PRAGMA journal_mode=WAL"))
        retry_while_locked(lambda: self.conn.executescript(_SCHEMA))

    def _key(self, source: str) -> str:
        return f"{self.context}:{source_hash(source)}"

    def get(self, source: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT result FROM verdicts WHERE key = ?", (self._key(source),)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, source: str, result: dict[str, Any]) -> bool:
        """Store *result* if it is :func:`cacheable`; returns whether it was stored."""
        if not cacheable(result):
            return False
        self.conn.execute("INSERT OR IGNORE INTO verdicts (key, result, created_at) VALUES (?, ?, ?)",
                          (self._key(source), json.dumps(result, sort_keys=True), time.time()))
        return True

    def __len__(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        self.conn.close()
