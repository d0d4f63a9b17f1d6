"""The run store: ``RUN_DIR/run.sqlite`` (WAL), one row per candidate, committed as it arrives.

Every candidate — passed or failed, including failed mutations — is written
with its lineage, source, gate results, descriptors, cell, objective,
per-hardware scores and LLM accounting.  The archive, the progress curves and
the summary are all derivable from this file, so a killed run loses only the
candidates that were in flight.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY,
    created_at REAL NOT NULL,
    parent_ids TEXT NOT NULL,
    mutator TEXT NOT NULL,
    kind TEXT NOT NULL,
    description TEXT NOT NULL,
    prompt_id TEXT,
    source TEXT,
    param_space TEXT,
    passed INTEGER NOT NULL,
    gate TEXT,
    reason TEXT NOT NULL,
    gates TEXT NOT NULL,
    descriptors TEXT,
    cell TEXT,
    objective REAL,
    hardware TEXT NOT NULL,
    archive_status INTEGER NOT NULL,
    llm_calls INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    worker TEXT,
    job_seed INTEGER,
    seconds REAL NOT NULL,
    verify_seconds REAL NOT NULL,
    predicted_objective REAL,
    measured TEXT
);
CREATE INDEX IF NOT EXISTS candidates_passed ON candidates(passed, objective);
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY,
    candidate_id INTEGER,
    created_at REAL NOT NULL,
    model TEXT,
    purpose TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS prompts (
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    updated_at REAL NOT NULL
);
"""


def _dumps(value: Any, sort_keys: bool = True) -> str:
    return json.dumps(value, sort_keys=sort_keys, default=_json_default)


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):          # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):        # numpy arrays
        return value.tolist()
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


@dataclass
class CandidateRow:
    """One stored candidate, JSON columns decoded."""

    id: int
    created_at: float
    parent_ids: list[int]
    mutator: str
    kind: str
    description: str
    prompt_id: str | None
    source: str | None
    param_space: dict | None
    passed: bool
    gate: str | None
    reason: str
    gates: list[dict]
    descriptors: dict | None
    cell: list[int] | None
    objective: float | None
    hardware: dict
    archive_status: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    worker: str | None
    job_seed: int | None
    seconds: float
    verify_seconds: float
    predicted_objective: float | None = None   # the model's objective when a device measured the candidate
    measured: dict | None = None               # the device's record (kernelfoundry/measure, docs/device.md)


_JSON_COLUMNS = ("parent_ids", "param_space", "gates", "descriptors", "cell", "hardware", "measured")
#: columns added after schema 1 (older stores get them, empty, when opened)
_ADDED_COLUMNS = {"predicted_objective": "REAL", "measured": "TEXT"}


class RunStore:
    """SQLite run store.  One writer (the driver); readers may open it concurrently."""

    def __init__(self, path: str | Path, *, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.exists():
            raise FileNotFoundError(f"no run store at {self.path}")
        self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(_SCHEMA)
        have = {row[1] for row in self.conn.execute("PRAGMA table_info(candidates)")}
        for column, kind in _ADDED_COLUMNS.items():
            if column not in have:
                try:
                    self.conn.execute(f"ALTER TABLE candidates ADD COLUMN {column} {kind}")
                except sqlite3.OperationalError:      # a read-only store: its rows read with these empty
                    pass
        if self.get_meta("schema_version") is None:
            self.set_meta("schema_version", SCHEMA_VERSION)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- meta -------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        # key order kept: a task's inputs are a mapping in launch order
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, _dumps(value, sort_keys=False)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    # -- candidates -------------------------------------------------------
    def next_candidate_id(self) -> int:
        row = self.conn.execute("SELECT COALESCE(MAX(id), -1) + 1 FROM candidates").fetchone()
        return int(row[0])

    def add_candidate(self, row: dict[str, Any], llm_log: list[dict] | None = None) -> int:
        """Insert one candidate (and its LLM calls) in one transaction; returns its id."""
        values = dict(row)
        values.setdefault("created_at", time.time())
        for col in _JSON_COLUMNS:
            if values.get(col) is not None:
                values[col] = _dumps(values[col])
        values["passed"] = int(bool(values["passed"]))
        cols = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        with self.conn:
            self.conn.execute("BEGIN")
            cur = self.conn.execute(f"INSERT INTO candidates({cols}) VALUES ({marks})", tuple(values.values()))
            cid = int(cur.lastrowid)
            for rec in llm_log or ():
                self._insert_llm_call(cid, rec, "mutation")
        return cid

    def candidate_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM candidates").fetchone()[0])

    def get_candidate(self, cid: int) -> CandidateRow | None:
        cur = self.conn.execute("SELECT * FROM candidates WHERE id = ?", (cid,))
        row = cur.fetchone()
        return self._decode(cur.description, row) if row else None

    def iter_candidates(self, *, passed_only: bool = False, columns: str = "*") -> Iterator[CandidateRow]:
        where = " WHERE passed = 1" if passed_only else ""
        cur = self.conn.execute(f"SELECT {columns} FROM candidates{where} ORDER BY id")
        desc = cur.description
        for row in cur:
            yield self._decode(desc, row)

    def sources_seen(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT source FROM candidates WHERE source IS NOT NULL")}

    @staticmethod
    def _decode(description, row) -> CandidateRow:
        data = {d[0]: v for d, v in zip(description, row)}
        for col in _JSON_COLUMNS:
            if data.get(col) is not None:
                data[col] = json.loads(data[col])
        if "passed" in data:
            data["passed"] = bool(data["passed"])
        fields = CandidateRow.__dataclass_fields__
        return CandidateRow(**{k: data.get(k) for k in fields})

    # -- LLM calls --------------------------------------------------------
    def add_llm_calls(self, candidate_id: int | None, records: list[dict], *, purpose: str = "mutation") -> None:
        with self.conn:
            self.conn.execute("BEGIN")
            for rec in records:
                self._insert_llm_call(candidate_id, rec, purpose)

    def _insert_llm_call(self, candidate_id: int | None, rec: dict, purpose: str) -> None:
        self.conn.execute(
            "INSERT INTO llm_calls(candidate_id, created_at, model, purpose, record) VALUES (?, ?, ?, ?, ?)",
            (candidate_id, float(rec.get("timestamp", time.time())), rec.get("model"), purpose, _dumps(rec)))

    def iter_llm_calls(self) -> Iterator[dict]:
        for cid, purpose, rec in self.conn.execute(
                "SELECT candidate_id, purpose, record FROM llm_calls ORDER BY id"):
            data = json.loads(rec)
            data.setdefault("candidate_id", cid)
            data.setdefault("purpose", purpose)
            yield data

    # -- prompt variants --------------------------------------------------
    def save_prompts(self, records: list[dict]) -> None:
        now = time.time()
        with self.conn:
            self.conn.execute("BEGIN")
            for rec in records:
                self.conn.execute("INSERT OR REPLACE INTO prompts(id, record, updated_at) VALUES (?, ?, ?)",
                                  (str(rec["id"]), _dumps(rec), now))

    def load_prompts(self) -> list[dict]:
        return [json.loads(r[0]) for r in self.conn.execute("SELECT record FROM prompts ORDER BY rowid")]
