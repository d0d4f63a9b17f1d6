"""A content-addressed cache of compiled kernels, shared by runs, benches and processes.

Key: sha256 over (cache schema, candidate source hash, launch signature with its
options, target, Triton version, toolchain: ptxas version / AMD code-generator
revision).  An entry is a directory ``<root>/v1/<key[:2]>/<key>/`` holding
``meta.json`` (status, error, resources, Triton metadata, stage seconds) and the
artefacts: text gzip-compressed (``kernel.ptx.gz``, ``kernel.sass.gz``,
``kernel.amdgcn.gz``; ~6x smaller), binaries as they are (``kernel.cubin``,
``kernel.hsaco``); :func:`read_artifact` returns a file's plain bytes.  Entries are written to a temporary directory and renamed into
place, so readers never see a partial entry and concurrent writers of one key
keep the first; a file added later (SASS on demand) is replaced atomically.
Nothing is ever rebuilt: a key present is a hit, compile errors included.

Location: the explicit path given to :class:`CompileCache`, else
``$KF_COMPILE_CACHE``, else ``$XDG_CACHE_HOME/kernelfoundry/compile`` (default
``~/.cache/kernelfoundry/compile``).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = "v1"
ENV_VAR = "KF_COMPILE_CACHE"
#: Artefact kind -> file name in an entry (text kinds are stored gzip-compressed).
FILES = {"ptx": "kernel.ptx.gz", "cubin": "kernel.cubin", "sass": "kernel.sass.gz", "amdgcn": "kernel.amdgcn.gz",
         "hsaco": "kernel.hsaco"}


def _encode(kind: str, data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0) if FILES[kind].endswith(".gz") else data


def read_artifact(path: str | Path) -> bytes:
    """The plain content of a cached artefact (decompressed when stored as ``.gz``)."""
    data = Path(path).read_bytes()
    return gzip.decompress(data) if str(path).endswith(".gz") else data


def default_cache_dir() -> Path:
    """``$KF_COMPILE_CACHE``, else ``$XDG_CACHE_HOME/kernelfoundry/compile`` (``~/.cache`` by default)."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernelfoundry" / "compile"


def compile_key(source_hash: str, signature_json: str, target: str, triton_version: str, toolchain: str) -> str:
    """The cache key of one compile (hex, 40 chars)."""
    text = json.dumps([SCHEMA, source_hash, signature_json, target, triton_version, toolchain])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


@dataclass
class CacheEntry:
    """One cached compile: its key, directory, ``meta.json`` content and artefact paths."""

    key: str
    path: Path
    meta: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)     # kind -> absolute path


class CompileCache:
    """The compiled-artefact cache at *path* (see the module docstring); counts hits and misses."""

    def __init__(self, path: str | Path | None = None):
        self.root = Path(path).expanduser() if path is not None else default_cache_dir()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.writes = 0

    def _dir(self, key: str) -> Path:
        if not (len(key) >= 8 and all(c in "0123456789abcdef" for c in key)):
            raise ValueError(f"not a compile cache key: {key!r}")
        return self.root / SCHEMA / key[:2] / key

    def _entry(self, key: str, path: Path) -> CacheEntry | None:
        try:
            meta = json.loads((path / "meta.json").read_text())
        except (OSError, ValueError):
            return None
        files = {kind: str(path / name) for kind, name in FILES.items() if (path / name).is_file()}
        return CacheEntry(key=key, path=path, meta=meta, files=files)

    def peek(self, key: str) -> CacheEntry | None:
        """The entry for *key* or None, without counting a hit or miss."""
        return self._entry(key, self._dir(key))

    def get(self, key: str) -> CacheEntry | None:
        """The entry for *key* (a hit) or None (a miss)."""
        entry = self.peek(key)
        with self._lock:
            if entry is None:
                self.misses += 1
            else:
                self.hits += 1
        return entry

    def put(self, key: str, meta: dict[str, Any], files: dict[str, bytes]) -> CacheEntry:
        """Store an entry atomically; if another writer stored *key* first, theirs is kept and returned."""
        final = self._dir(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:8]}-", dir=final.parent))
        try:
            for kind, data in files.items():
                (tmp / FILES[kind]).write_bytes(_encode(kind, data))
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
            os.chmod(tmp, 0o755)
            try:
                os.rename(tmp, final)
                with self._lock:
                    self.writes += 1
            except OSError:
                if not (final / "meta.json").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        entry = self._entry(key, final)
        if entry is None:
            raise OSError(f"compile cache entry {final} could not be read back")
        return entry

    def add_file(self, entry: CacheEntry, kind: str, data: bytes) -> CacheEntry:
        """Add or replace one artefact of an existing entry (atomic replace)."""
        target = entry.path / FILES[kind]
        tmp = entry.path / f".{FILES[kind]}.{uuid.uuid4().hex[:8]}"
        tmp.write_bytes(_encode(kind, data))
        os.replace(tmp, target)
        entry.files[kind] = str(target)
        return entry

    def update_meta(self, entry: CacheEntry, **changes: Any) -> CacheEntry:
        """Merge *changes* into an entry's ``meta.json`` (atomic replace)."""
        meta = {**entry.meta, **changes}
        tmp = entry.path / f".meta.{uuid.uuid4().hex[:8]}"
        tmp.write_text(json.dumps(meta, indent=1, sort_keys=True))
        os.replace(tmp, entry.path / "meta.json")
        entry.meta = meta
        return entry

    def stats(self) -> dict[str, Any]:
        """``{"hits", "misses", "hit_rate", "writes", "path"}`` for lookups made through this object."""
        with self._lock:
            total = self.hits + self.misses
            return {"hits": self.hits, "misses": self.misses, "writes": self.writes,
                    "hit_rate": round(self.hits / total, 4) if total else None, "path": str(self.root)}
