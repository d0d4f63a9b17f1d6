"""The experience memory: what every run learns, for the runs after it (docs/memory.md)."""

from __future__ import annotations

import os
from pathlib import Path

from .run_memory import RunMemory
from .signature import TaskSignature, signature_of, similarity
from .store import ExperienceStore, MemoryFileError

#: environment variable naming the memory file ("off" disables it), below --memory
ENV_VAR = "KERNELFOUNDRY_MEMORY"
FILE_NAME = "memory.sqlite"

__all__ = ["ENV_VAR", "ExperienceStore", "MemoryFileError", "RunMemory", "TaskSignature", "resolve_memory_path",
           "signature_of", "similarity"]


def resolve_memory_path(given: str | Path | None, archives_root: str | Path, *, enabled: bool = True) -> Path | None:
    """--memory PATH, else $KERNELFOUNDRY_MEMORY, else ARCHIVES/memory.sqlite; None when switched off."""
    if not enabled:
        return None
    if given is not None:
        return Path(given)
    env = os.environ.get(ENV_VAR, "").strip()
    if env.lower() in ("off", "none", "0"):
        return None
    return Path(env) if env else Path(archives_root) / FILE_NAME
