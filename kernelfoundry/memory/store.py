"""The experience memory: one SQLite file shared by every run (docs/memory.md).

Three tables.  ``experiences``: one row per stored candidate (task signature, parent,
action, request kind, diff, outcome).  ``q_values``: Monte-Carlo value sums per
(task signature, stage, action), updated with each experience, from which priors for a
new task are pooled over similar signatures.  ``elites``: the best kernels of each
finished run, the cold-start seeds of later runs.

Concurrent runs (separate processes, bench workers) share the file safely: WAL mode,
a 30 s busy timeout, and every write is one short ``BEGIN IMMEDIATE`` transaction whose
value updates are increments (``n = n + 1``), so no update is lost to a race.  Runs that
start on a new file together wait for each other: the WAL switch is retried while another
process holds it, and the schema is checked and created under the write lock.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..errors import UserError
from .task_signature import TaskSignature, similarity

SCHEMA_VERSION = 1
#: how long opening the file waits for another process's lock, in seconds
OPEN_TIMEOUT_S = 30.0
#: a diff is kept up to this many characters (then cut, saying so), zlib-compressed
MAX_DIFF_CHARS = 6000
SIG_COLUMNS = ("task", "op_kind", "level", "dtypes", "shape_class", "hardware")

_SIG_DDL = ", ".join(f"{c} {'INTEGER' if c == 'level' else 'TEXT'} NOT NULL" for c in SIG_COLUMNS)
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS experiences (
    id INTEGER PRIMARY KEY, created_at REAL NOT NULL, run TEXT NOT NULL,
    {_SIG_DDL},
    stage INTEGER NOT NULL, action TEXT NOT NULL, request_kind TEXT NOT NULL, prompt_key TEXT,
    parent_id INTEGER, parent_cell TEXT, parent_objective REAL, parent_passed INTEGER,
    candidate_id INTEGER, gate TEXT, passed INTEGER NOT NULL, objective REAL, gain REAL,
    reward REAL NOT NULL, description TEXT, diff BLOB);
CREATE INDEX IF NOT EXISTS experiences_value ON experiences (op_kind, stage, passed, reward);
CREATE INDEX IF NOT EXISTS experiences_task ON experiences (task);
CREATE TABLE IF NOT EXISTS q_values (
    {_SIG_DDL},
    stage INTEGER NOT NULL, action TEXT NOT NULL,
    n INTEGER NOT NULL, sum_r REAL NOT NULL, sum_r2 REAL NOT NULL, n_positive INTEGER NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY ({", ".join(SIG_COLUMNS)}, stage, action));
CREATE TABLE IF NOT EXISTS elites (
    run TEXT NOT NULL, candidate_id INTEGER NOT NULL,
    {_SIG_DDL},
    objective REAL NOT NULL, cell TEXT, n_inputs INTEGER NOT NULL, source TEXT NOT NULL,
    created_at REAL NOT NULL, PRIMARY KEY (run, candidate_id));
"""


class MemoryFileError(UserError):
    """The memory file cannot be used (names the file and what to do)."""


@dataclass(frozen=True)
class Prior:
    """Pooled value of one action over similar signatures: weighted count and mean reward."""

    n: float
    mean: float
    n_positive: float = 0.0


def compress_diff(diff: str) -> bytes | None:
    if not diff:
        return None
    if len(diff) > MAX_DIFF_CHARS:
        diff = diff[:MAX_DIFF_CHARS] + f"\n... (diff cut at {MAX_DIFF_CHARS} characters)\n"
    return zlib.compress(diff.encode("utf-8"), 6)


def decompress_diff(blob: bytes | None) -> str:
    return zlib.decompress(blob).decode("utf-8") if blob else ""


class ExperienceStore:
    """The memory file; see the module docstring.  Use as a context manager or call close()."""

    def __init__(self, path: str | Path, *, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise MemoryFileError(f"memory file {self.path} does not exist (a run creates it; see docs/memory.md).")
        if self.path.exists() and not self.path.is_file():
            raise MemoryFileError(f"memory path {self.path} is not a file.")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._open()
            with self._write():                     # checked and created under the write lock: a run that
                version = self._schema_version()    # opens the file while another creates it waits for it
                if version is None and self.db.execute(
                        "SELECT COUNT(*) FROM sqlite_master WHERE type='table'").fetchone()[0]:
                    raise MemoryFileError(f"{self.path} is an SQLite file but not a KernelFoundry memory (is it a "
                                          "run's run.sqlite?); give another --memory PATH.")
                if version is None:
                    for statement in filter(str.strip, _SCHEMA.split(";")):
                        self.db.execute(statement)
                    self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            if version is not None and version > SCHEMA_VERSION:
                raise MemoryFileError(f"memory file {self.path} has schema {version}, newer than this KernelFoundry "
                                   f"({SCHEMA_VERSION}); upgrade, or use another --memory PATH.")
        except MemoryFileError:
            self._close_quietly()
            raise
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise MemoryFileError(f"memory file {self.path} cannot be used ({exc}); move it away, give another "
                               "--memory PATH, or run with --no-memory.") from None
        except OSError as exc:
            raise MemoryFileError(f"memory file {self.path} cannot be created: {exc.strerror}.") from None

    # -- plumbing ---------------------------------------------------------------------
    def _open(self) -> None:
        """Connect and switch to WAL.  Two processes opening a new file at once can get "database is
        locked" from the mode switch at once, without SQLite's busy wait: try again for up to 30 s."""
        deadline, pause = time.monotonic() + OPEN_TIMEOUT_S, 0.02
        while True:
            self.db = sqlite3.connect(str(self.path), timeout=OPEN_TIMEOUT_S, isolation_level=None,
                                      check_same_thread=False)
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                return
            except sqlite3.OperationalError as exc:
                self._close_quietly()
                if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 1.0)

    def _schema_version(self) -> int | None:
        has_meta = self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            return None
        row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        return int(row[0]) if row else None

    def _write(self):
        return _Transaction(self.db)

    def close(self) -> None:
        self.db.close()

    def _close_quietly(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            db.close()

    def __enter__(self) -> "ExperienceStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------
    def add_experience(self, sig: TaskSignature, exp: dict[str, Any], value_actions: list) -> int:
        """Store one experience and add its reward to the values of *value_actions* (names, or
        (name, reward) pairs for an action whose reward is its own, e.g. a prompt variant's credit)."""
        return self.add_experiences(sig, [(exp, value_actions)])[-1]

    def add_experiences(self, sig: TaskSignature, batch: list[tuple[dict[str, Any], list]]) -> list[int]:
        """Store experiences (each with the actions whose values it updates) in one transaction."""
        ids = []
        with self._write():
            for exp, value_actions in batch:
                ids.append(self._insert(sig, exp, value_actions))
        return ids

    def _insert(self, sig: TaskSignature, exp: dict[str, Any], value_actions: list) -> int:
        now = time.time()
        sigv = [getattr(sig, c) for c in SIG_COLUMNS]
        reward = float(exp["reward"])
        cur = self.db.execute(
            f"INSERT INTO experiences (created_at, run, {', '.join(SIG_COLUMNS)}, stage, action, request_kind, "
            "prompt_key, parent_id, parent_cell, parent_objective, parent_passed, candidate_id, gate, passed, "
            "objective, gain, reward, description, diff) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [now, exp.get("run", ""), *sigv, int(exp["stage"]), exp["action"], exp.get("request_kind", ""),
             exp.get("prompt_key"), exp.get("parent_id"), _json(exp.get("parent_cell")),
             exp.get("parent_objective"), _bool(exp.get("parent_passed")), exp.get("candidate_id"),
             exp.get("gate"), int(bool(exp["passed"])), exp.get("objective"), exp.get("gain"), reward,
             (exp.get("description") or "")[:500], compress_diff(exp.get("diff") or "")])
        for item in value_actions:
            action, r = item if isinstance(item, tuple) else (item, reward)
            self.db.execute(
                f"INSERT INTO q_values ({', '.join(SIG_COLUMNS)}, stage, action, n, sum_r, sum_r2, n_positive, "
                f"updated_at) VALUES (?,?,?,?,?,?,?,?,1,?,?,?,?) ON CONFLICT ({', '.join(SIG_COLUMNS)}, stage, action) "
                "DO UPDATE SET n = n + 1, "
                "sum_r = sum_r + excluded.sum_r, sum_r2 = sum_r2 + excluded.sum_r2, "
                "n_positive = n_positive + excluded.n_positive, updated_at = excluded.updated_at",
                [*sigv, int(exp["stage"]), action, r, r * r, int(r > 0), now])
        return int(cur.lastrowid)

    def record_elites(self, run: str, sig: TaskSignature, elites: list[dict[str, Any]]) -> None:
        """Replace the elites stored for *run* by *elites* (dicts: candidate_id, objective, cell,
        n_inputs, source)."""
        now = time.time()
        with self._write():
            self.db.execute("DELETE FROM elites WHERE run = ?", (run,))
            for e in elites:
                self.db.execute(
                    f"INSERT INTO elites (run, candidate_id, {', '.join(SIG_COLUMNS)}, objective, cell, n_inputs, "
                    "source, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [run, int(e["candidate_id"]), *[getattr(sig, c) for c in SIG_COLUMNS], float(e["objective"]),
                     _json(e.get("cell")), int(e["n_inputs"]), e["source"], now])

    def delete_task(self, task: str) -> int:
        """Forget everything about *task*; returns the number of experiences removed."""
        with self._write():
            n = self.db.execute("DELETE FROM experiences WHERE task = ?", (task,)).rowcount
            self.db.execute("DELETE FROM q_values WHERE task = ?", (task,))
            self.db.execute("DELETE FROM elites WHERE task = ?", (task,))
        return n

    def prune(self, *, keep_per_task: int | None = None, older_than_s: float | None = None,
              task: str | None = None) -> int:
        """Drop experiences (values keep their sums: they are the memory's summary); returns how many."""
        removed = 0
        with self._write():
            if task is not None:
                removed += self.db.execute("DELETE FROM experiences WHERE task = ?", (task,)).rowcount
                self.db.execute("DELETE FROM q_values WHERE task = ?", (task,))
                self.db.execute("DELETE FROM elites WHERE task = ?", (task,))
            if older_than_s is not None:
                removed += self.db.execute("DELETE FROM experiences WHERE created_at < ?",
                                           (time.time() - older_than_s,)).rowcount
            if keep_per_task is not None:
                removed += self.db.execute(
                    "DELETE FROM experiences WHERE id IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER "
                    "(PARTITION BY task ORDER BY (passed AND reward > 0) DESC, reward DESC, id DESC) AS rank "
                    "FROM experiences) WHERE rank > ?)", (int(keep_per_task),)).rowcount
        self.db.execute("VACUUM")
        return removed

    # -- reading ----------------------------------------------------------------------
    def _signatures(self, table: str, exclude_task: str | None) -> list[TaskSignature]:
        rows = self.db.execute(f"SELECT DISTINCT {', '.join(SIG_COLUMNS)} FROM {table}").fetchall()
        return [TaskSignature(*r) for r in rows if r[0] != exclude_task]

    def priors(self, sig: TaskSignature, stage: int, *, min_similarity: float = 0.5,
               exclude_task: str | None = None) -> dict[str, Prior]:
        """Per action: its value pooled over stored signatures, each weighted by its similarity."""
        acc: dict[str, list[float]] = {}
        for other in self._signatures("q_values", exclude_task):
            w = similarity(sig, other)
            if w < min_similarity:
                continue
            for action, n, sum_r, n_pos in self.db.execute(
                    f"SELECT action, n, sum_r, n_positive FROM q_values WHERE stage = ? AND "
                    f"{' AND '.join(f'{c} = ?' for c in SIG_COLUMNS)}", [stage, *[getattr(other, c) for c in SIG_COLUMNS]]):
                a = acc.setdefault(action, [0.0, 0.0, 0.0])
                a[0] += w * n
                a[1] += w * sum_r
                a[2] += w * n_pos
        return {k: Prior(n=v[0], mean=v[1] / v[0] if v[0] else 0.0, n_positive=v[2]) for k, v in acc.items() if v[0]}

    def top_experiences(self, sig: TaskSignature, stage: int, k: int = 3, *, min_similarity: float = 0.5,
                        exclude_task: str | None = None, scan: int = 400) -> list[dict[str, Any]]:
        """The *k* most valuable successful experiences of similar tasks for *stage*
        (stage 1: fixes of failed kernels; stage 2: the largest gains), value x similarity first."""
        rows = self.db.execute(
            f"SELECT {', '.join(SIG_COLUMNS)}, action, description, gain, reward, diff, objective, parent_objective "
            "FROM experiences WHERE op_kind = ? AND stage = ? AND passed = 1 AND reward > 0 AND diff IS NOT NULL "
            "ORDER BY reward DESC, id DESC LIMIT ?", (sig.op_kind, stage, scan)).fetchall()
        scored, seen = [], set()
        for r in rows:
            other = TaskSignature(*r[:6])
            if other.task == exclude_task:
                continue
            w = similarity(sig, other)
            if w < min_similarity:
                continue
            diff = decompress_diff(r[10])
            if not diff.strip() or diff in seen:
                continue
            seen.add(diff)
            scored.append((w * r[9], {"task": other.task, "action": r[6], "description": r[7], "gain": r[8],
                                      "reward": r[9], "diff": diff, "objective": r[11],
                                      "parent_objective": r[12], "similarity": w}))
        scored.sort(key=lambda t: -t[0])
        return [e for _, e in scored[:k]]

    def best_elites(self, sig: TaskSignature, n_inputs: int, k: int = 3, *, min_similarity: float = 0.6,
                    exclude_task: str | None = None) -> list[dict[str, Any]]:
        """Elites of the most similar tasks whose ``launch`` takes *n_inputs* inputs, best first."""
        rows = self.db.execute(
            f"SELECT {', '.join(SIG_COLUMNS)}, run, candidate_id, objective, source FROM elites WHERE n_inputs = ? "
            "ORDER BY objective DESC", (n_inputs,)).fetchall()
        out, seen = [], set()
        for r in rows:
            other = TaskSignature(*r[:6])
            if other.task == exclude_task or r[9] in seen:
                continue
            w = similarity(sig, other)
            if w >= min_similarity:
                seen.add(r[9])
                out.append({"task": other.task, "run": r[6], "candidate_id": r[7], "objective": r[8],
                            "source": r[9], "similarity": w})
        out.sort(key=lambda e: (e["task"] != sig.task, -e["similarity"], -e["objective"]))
        return out[:k]

    def stats(self) -> dict[str, Any]:
        q = self.db.execute
        per_task = q("SELECT task, op_kind, COUNT(*), SUM(passed), MAX(objective) FROM experiences GROUP BY task "
                     "ORDER BY task").fetchall()
        actions = q("SELECT stage, action, SUM(n), SUM(sum_r), SUM(n_positive) FROM q_values GROUP BY stage, action "
                    "ORDER BY stage, SUM(sum_r) / SUM(n) DESC").fetchall()
        return {
            "path": str(self.path), "bytes": self.path.stat().st_size if self.path.exists() else 0,
            "experiences": q("SELECT COUNT(*) FROM experiences").fetchone()[0],
            "elites": q("SELECT COUNT(*) FROM elites").fetchone()[0],
            "runs": q("SELECT COUNT(DISTINCT run) FROM experiences").fetchone()[0],
            "tasks": [{"task": t, "op_kind": k, "experiences": n, "correct": int(c or 0), "best_objective": b}
                      for t, k, n, c, b in per_task],
            "values": [{"stage": s, "action": a, "n": int(n), "q": (r / n) if n else 0.0, "n_positive": int(p)}
                       for s, a, n, r, p in actions],
        }

    def iter_experiences(self, *, task: str | None = None, action: str | None = None,
                         limit: int | None = None) -> Iterator[dict[str, Any]]:
        where, args = [], []
        for col, val in (("task", task), ("action", action)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = "SELECT * FROM experiences" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        cur = self.db.execute(sql, args)
        names = [d[0] for d in cur.description]
        for row in cur:
            rec = dict(zip(names, row))
            rec["diff"] = decompress_diff(rec["diff"])
            rec["parent_cell"] = json.loads(rec["parent_cell"]) if rec["parent_cell"] else None
            yield rec

    def iter_elites(self) -> Iterator[dict[str, Any]]:
        cur = self.db.execute("SELECT * FROM elites ORDER BY task, objective DESC")
        names = [d[0] for d in cur.description]
        for row in cur:
            yield dict(zip(names, row))


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error): one writer at a time, no lost update."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type, exc, tb):
        if exc_type:
            self.db.execute("ROLLBACK")
            return False
        try:
            self.db.execute("COMMIT")
        except sqlite3.Error:
            try:                                 # never keep the write lock after a failed commit
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        return False


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(list(value) if isinstance(value, tuple) else value)


def _bool(value: Any) -> int | None:
    return None if value is None else int(bool(value))
