"""The options of one evolve run as data (:class:`EvolveConfig`), which the ``evolve`` and ``bench``
commands build and :func:`kernelfoundry.search.session.run_evolution` runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import DEFAULT_ARCHIVES

DEFAULT_BUDGET = 40


@dataclass
class EvolveConfig:
    """Options of one evolve run (the command-line flags, as data)."""

    task: Path | None = None
    budget: int = DEFAULT_BUDGET
    workers: int = 0                       # 0: one per CPU of the local machine or of the cluster
    seed: int = 0
    out: Path | None = None
    resume: Path | None = None
    hardware: list[str] | None = None
    models: list[str] = field(default_factory=list)
    ray_address: str | None = None
    strategy: str = "map-elites"
    prompt_evolution: bool = True
    tuning: bool = True
    max_cost: float | None = None
    max_llm_seconds: float | None = None
    routing: str | None = None             # "fixed" | "adaptive"; None: adaptive for more than one model
    max_kernel_configs: int = 8
    prompt_dir: Path | None = None
    archives_root: Path = DEFAULT_ARCHIVES
    quiet: bool = False
    verdict_cache: Path | None = None     # shared by bench runs; see evaluate/verdict_cache.py
    memory: Path | None = None             # experience memory file (None: $KERNELFOUNDRY_MEMORY or archives/)
    memory_mode: str = "on"                # "on" (read and write), "write" (record only), "off"
    device: str = "auto"                   # auto | cuda | model: measure on a GPU (docs/device.md)
    device_top_k: int = 8                  # configs per target shape the device times (the model's fastest)
    trace_cache: bool = True               # reuse traces of configs a PARAMS-only sibling had traced
    explicit: frozenset[str] = frozenset()  # options given on the command line (a resume checks them)


def config_to_meta(cfg: EvolveConfig) -> dict[str, Any]:
    d = asdict(cfg)
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in d.items() if k != "explicit"}
