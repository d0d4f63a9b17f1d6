"""Write a calibrated hardware file: the original's text with the fitted figures replaced, each with its
source comment, a new ``name``, and a ``calibration`` mapping holding the fit's residuals."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ..perfmodel import HardwareSpec, load_hardware, writable_hardware_dir
from .rows import CalibrationError


def default_path(base: HardwareSpec, date: str) -> Path:
    return writable_hardware_dir() / f"{base.name}-calibrated-{date}.yaml"


def render(base: HardwareSpec, values: dict[str, float], *, name: str, note: str,
           calibration: dict[str, Any]) -> str:
    """The new file's text (see the module docstring)."""
    text = Path(base.path).read_text(encoding="utf-8")
    lines = text.splitlines()
    for figure, value in values.items():
        parent, _, child = figure.rpartition(".")
        key = child if parent else figure
        indent = r"[ \t]+" if parent else ""
        pattern = re.compile(rf"^({indent}{re.escape(key)}:)[ \t]*[^#\n]*?(\s*#.*)?$")
        start = _block_start(lines, parent) if parent else 0
        for i in range(start, len(lines)):
            if parent and i > start and lines[i] and not lines[i][0].isspace():
                break
            m = pattern.match(lines[i])
            if m:
                was = m.group(0).split(":", 1)[1].split("#", 1)[0].strip()
                lines[i] = f"{m.group(1)} {value:.4g}  # {note} (was {was})"
                break
        else:
            raise CalibrationError(f"hardware file {base.path}: no line for field '{figure}' to replace.")
    lines = [f"name: {name}" if re.match(r"^name:", ln) else ln for ln in lines]
    lines = [ln for ln in lines if not ln.startswith("calibration:")]
    block = yaml.safe_dump({"calibration": calibration}, sort_keys=False, default_flow_style=None, width=110)
    return "\n".join(lines).rstrip() + "\n" + block


def _block_start(lines: list[str], parent: str) -> int:
    for i, ln in enumerate(lines):
        if ln.startswith(f"{parent}:"):
            return i
    raise CalibrationError(f"no '{parent}:' mapping in the hardware file")


def write(base: HardwareSpec, values: dict[str, float], path: Path, *, note: str,
          calibration: dict[str, Any]) -> HardwareSpec:
    """Write the calibrated file to *path* and load it back (the loader validates it)."""
    if base.calibration:
        raise CalibrationError(f"hardware file {base.path} is itself calibrated; calibrate its original instead.")
    text = render(base, values, name=path.stem, note=note, calibration=calibration)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CalibrationError(f"cannot write {path}: {exc.strerror or exc}.") from None
    return load_hardware(path)
