"""The search: a MAP-Elites archive of kernels, the driver, its workers and the run directory (docs/search.md).

Outside this package (the commands, experiments/), use these names, not its modules:

* a run (``session``, ``config``): :func:`run_evolution`, :class:`EvolveConfig`, :func:`config_to_meta`,
  ``DEFAULT_BUDGET``; :func:`sticky_interrupt` (``interrupt``);
* a run directory: ``STORE_NAME``, ``SUMMARY_NAME`` (``rundir``); :func:`open_run`, :class:`RunView`,
  :func:`progress_curves` (``history``); :class:`RunStats`, :func:`format_gate_seconds`,
  :func:`write_json_atomic` (``stats``);
* Ray (``cluster``): :func:`start_ray`, :func:`resolve_address`, :func:`cluster_cpus`;
* the engine, for the engine's benchmarks: :class:`ArchiveSpec`, :class:`KernelArchive` (``archive``),
  :class:`SearchDriver`, :class:`SearchSettings` (``loop``), :class:`ProgressLine` (``progress``),
  :class:`InFlight`, :class:`WorkerPool` (``workers``).

Each is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import public_names

if TYPE_CHECKING:       # for type checkers, and for grimp's graph: the package depends on these modules
    from .archive import ArchiveSpec, KernelArchive
    from .cluster import cluster_cpus, resolve_address, start_ray
    from .config import DEFAULT_BUDGET, EvolveConfig, config_to_meta
    from .history import RunView, open_run, progress_curves
    from .interrupt import sticky_interrupt
    from .loop import SearchDriver, SearchSettings
    from .progress import ProgressLine
    from .rundir import STORE_NAME, SUMMARY_NAME
    from .session import run_evolution
    from .stats import RunStats, format_gate_seconds, write_json_atomic
    from .workers import InFlight, WorkerPool

_EXPORTS = {
    "run_evolution": "session", "EvolveConfig": "config", "config_to_meta": "config", "DEFAULT_BUDGET": "config",
    "sticky_interrupt": "interrupt", "STORE_NAME": "rundir", "SUMMARY_NAME": "rundir",
    "open_run": "history", "RunView": "history", "progress_curves": "history",
    "RunStats": "stats", "format_gate_seconds": "stats", "write_json_atomic": "stats",
    "start_ray": "cluster", "resolve_address": "cluster", "cluster_cpus": "cluster",
    "ArchiveSpec": "archive", "KernelArchive": "archive", "SearchDriver": "loop", "SearchSettings": "loop",
    "ProgressLine": "progress", "InFlight": "workers", "WorkerPool": "workers",
}

__all__ = ["ArchiveSpec", "DEFAULT_BUDGET", "EvolveConfig", "InFlight", "KernelArchive", "ProgressLine",
           "RunStats", "RunView", "STORE_NAME", "SUMMARY_NAME", "SearchDriver", "SearchSettings", "WorkerPool",
           "cluster_cpus", "config_to_meta", "format_gate_seconds", "open_run", "progress_curves",
           "resolve_address", "run_evolution", "start_ray", "sticky_interrupt", "write_json_atomic"]

__getattr__, __dir__ = public_names(__name__, _EXPORTS, globals())
