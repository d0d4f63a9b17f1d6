"""Write a config's compiled assembly for inspection (``verify --asm DIR``), and SASS on demand.

:func:`write_asm` writes, per hardware, the PTX and SASS (NVIDIA) or AMDGCN (AMD)
of each kernel that one config launches, plus ``resources.json`` (signature,
resources, error per kernel) into ``DIR/<hardware>/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from .cache import CacheEntry, CompileCache, read_artifact
from .nvidia import disassemble, sass_mix
from .report import CompileReport, KernelCompile
from .resources import CompiledResources
from .targets import CompileTarget, parse_target


def add_sass(cache: CompileCache, key: str, target: CompileTarget) -> CacheEntry | None:
    """Disassemble a cached NVIDIA cubin that has no SASS yet; store it and the SASS instruction mix.

    Returns the updated entry, or None when there is nothing to disassemble.
    """
    entry = cache.peek(key)
    if entry is None or target.vendor != "nvidia" or "cubin" not in entry.files:
        return entry
    if "sass" in entry.files:
        return entry
    text, _ = disassemble(read_artifact(entry.files["cubin"]), target)
    if not text:
        return entry
    cache.add_file(entry, "sass", text.encode())
    if entry.meta.get("resources"):
        merged = CompiledResources.from_dict({**entry.meta["resources"], **sass_mix(text)})
        cache.update_meta(entry, resources=merged.to_dict())
    return entry


def _file_stem(kernel: KernelCompile, used: set[str]) -> str:
    stem, n = kernel.kernel or "kernel", 1
    while stem in used:
        n += 1
        stem = f"{kernel.kernel}_{n}"
    used.add(stem)
    return stem


def write_asm(report: CompileReport, directory: str | Path, *, configs: Mapping[str, str] | None = None,
              cache: CompileCache | str | Path | None = None, sass: bool = True) -> list[Path]:
    """Write each hardware's assembly for one config into ``directory/<hardware>/``; return the files.

    *configs*: hardware -> config key (e.g. the model's best config per
    hardware); hardware not named there get their first config.  Hardware
    without a backend are skipped.  *sass*: disassemble NVIDIA cubins that were
    not disassembled yet (needs *cache*, the cache the report was built with).
    """
    out_dir = Path(directory)
    store = cache if isinstance(cache, CompileCache) else (CompileCache(cache) if cache is not None else None)
    written: list[Path] = []
    for name, hw in report.hardware.items():
        if hw.status == "no_backend" or not hw.configs:
            continue
        key = (configs or {}).get(name)
        if key is None:
            key = next(iter(hw.configs))
        if key not in hw.configs:
            raise KeyError(f"config {key!r} was not compiled for {name}; compiled: {', '.join(hw.configs)}")
        target = parse_target(hw.target)
        hw_dir = out_dir / name
        hw_dir.mkdir(parents=True, exist_ok=True)
        used: set[str] = set()
        summary = {"hardware": name, "target": hw.target, "config": key, "kernels": []}
        for kernel in hw.configs[key].kernels:
            stem = _file_stem(kernel, used)
            artifacts = dict(kernel.artifacts)
            if sass and store is not None and target.vendor == "nvidia" and "sass" not in artifacts:
                entry = add_sass(store, kernel.key, target)
                if entry is not None:
                    artifacts.update(entry.files)
            for kind in ("ptx", "sass", "amdgcn"):
                if kind in artifacts and Path(artifacts[kind]).is_file():
                    path = hw_dir / f"{stem}.{kind}"
                    path.write_bytes(read_artifact(artifacts[kind]))
                    written.append(path)
            summary["kernels"].append({"file": stem, "kernel": kernel.kernel, "ok": kernel.ok, "error": kernel.error,
                                       "signature": kernel.signature,
                                       "resources": kernel.resources.to_dict() if kernel.resources else None})
        path = hw_dir / "resources.json"
        path.write_text(json.dumps(summary, indent=1))
        written.append(path)
    return written
