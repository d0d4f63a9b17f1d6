"""The experience memory: what every run learns, for the runs after it (docs/memory.md).

Outside this package, use these names, not its modules: the memory (:class:`RunMemory`,
:class:`ExperienceStore`, :func:`resolve_memory_path`, ``MEMORY_SEED_PREFIX``, :func:`is_memory_seed`);
a task's signature (:class:`TaskSignature`, :func:`signature_of`, :func:`similarity`); the values both the
memory and the LLM router learn with (``DRAFT``, ``REFINE``, ``FAILED_REFINE``, :func:`reward_of`,
:func:`gain_of`, :func:`child_gain`) and the operator bandit's priors (:class:`Arm`, ``COLD_MEAN``,
``COLD_PRIOR_N``, ``KAPPA``, ``PRIOR_CAP``, ``REWARD_SD``).
"""

from __future__ import annotations

import os
from pathlib import Path

from .bandit import COLD_MEAN, COLD_PRIOR_N, KAPPA, PRIOR_CAP, REWARD_SD, Arm
from .run_memory import MEMORY_SEED_PREFIX, RunMemory, is_memory_seed
from .task_signature import TaskSignature, signature_of, similarity
from .store import ExperienceStore, MemoryFileError
from .values import DRAFT, FAILED_REFINE, REFINE, child_gain, gain_of, reward_of

#: environment variable naming the memory file ("off" disables it), below --memory
ENV_VAR = "KERNELFOUNDRY_MEMORY"
FILE_NAME = "memory.sqlite"

__all__ = ["COLD_MEAN", "COLD_PRIOR_N", "DRAFT", "ENV_VAR", "ExperienceStore", "FAILED_REFINE", "KAPPA",
           "MEMORY_SEED_PREFIX", "MemoryFileError", "PRIOR_CAP", "REFINE", "REWARD_SD", "Arm", "RunMemory",
           "TaskSignature", "child_gain", "gain_of", "is_memory_seed", "resolve_memory_path", "reward_of",
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
