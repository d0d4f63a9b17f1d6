"""Fidelity datasets: measured latencies the model is compared with (``experiments/fidelity/*.yaml``).

A dataset file is YAML (format: ``docs/fidelity.md``)::

    dataset: kernelbench_h100          # the file's stem
    description: ...
    predictor: eager                   # eager: the eager-PyTorch baseline; kernel: the Triton kernel model
    hardware: h100                     # hardware library name the rows were measured on
    timing: kernelbench                # kernelbench | do_bench (how the numbers were taken)
    origin: measurement                # optional: measurement (default) | estimate (another model's
                                       # runtimes: compared and reported, never in an error band)
    source: {...}                      # where the numbers come from (free-form)
    rows:
      - id: L1-23_Softmax
        kind: softmax                  # op kind (tables, error bands)
        measured_ms: 8.52
        spread_ms: [8.46, 8.90]        # optional: [low, high] of the measurement
        weight: 1.0                    # optional: < 1 for rows the source calls noisy
        note: ...                      # optional
        # eager rows: the reference and its inputs
        reference: "def reference(x): ..."
        inputs: {x: {shape: [4096, 393216], dtype: float32}}
        # kernel rows: a task file, a candidate kernel, the shape and the config that ran
        task: liger/rms_norm.yaml      # relative to the dataset file
        kernel: liger/rms_norm.py
        shape: {M: 2048, H: 1024}
        config: {num_warps: 4, num_stages: 1}
        # or, for an autotuned measurement (the fastest of a list, which one not published):
        # configs: [{TILE: 128x256x64, num_warps: 8, num_stages: 3}, ...]   # predicted as the minimum

Regression thresholds live beside the dataset in ``<stem>.thresholds.yaml``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import UserError

PREDICTORS = ("eager", "kernel")
TIMINGS = ("kernelbench", "do_bench")
#: What ``measured_ms`` holds: timings, or runtimes another (calibrated) model estimates.
ORIGINS = ("measurement", "estimate")
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")
THRESHOLD_KEYS = {"geomean_error_max": (1.0, 100.0), "within_25_min": (0.0, 1.0), "within_2x_min": (0.0, 1.0),
                  "spearman_min": (-1.0, 1.0), "max_error_max": (1.0, 1000.0), "median_error_max": (0.0, 100.0)}


class FidelityError(UserError):
    """A dataset or thresholds file is missing or malformed."""


@dataclass(frozen=True)
class Row:
    """One measurement."""

    id: str
    kind: str
    measured_ms: float
    spread_ms: tuple[float, float] | None = None
    weight: float = 1.0
    note: str = ""
    reference: str = ""                                   # eager rows
    inputs: tuple[tuple[str, tuple[int, ...], str], ...] = ()
    task: Path | None = None                              # kernel rows
    kernel: Path | None = None
    shape: dict[str, int] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    # an autotuned row: the configs the tuner chose from (the row ran the fastest); ``config`` is then {}
    configs: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Dataset:
    """A validated dataset file."""

    name: str
    path: Path
    description: str
    predictor: str
    hardware: str
    timing: str
    source: Any
    rows: tuple[Row, ...]
    origin: str = "measurement"

    @property
    def measured(self) -> bool:
        """Its numbers are measurements (an ``estimate`` dataset is compared, never made a band of)."""
        return self.origin == "measurement"

    @property
    def thresholds_path(self) -> Path:
        return self.path.with_name(self.path.stem + ".thresholds.yaml")


def is_dataset_file(path: Path) -> bool:
    """A YAML file with a top-level ``dataset:`` key (task, thresholds and other files are not)."""
    if not (path.is_file() and path.suffix in (".yaml", ".yml")) or path.name.endswith(".thresholds.yaml"):
        return False
    try:
        with path.open(errors="replace") as fh:
            return any(line.startswith("dataset:") for line in fh)
    except OSError:
        return False


def load_dataset(path: str | Path) -> Dataset:
    """Read and validate a dataset file; :class:`FidelityError` names the file and field."""
    path = Path(path)
    data = _read(path, "dataset file")
    where = f"dataset file {path}"

    def fail(name: str, msg: str) -> FidelityError:
        return FidelityError(f"{where}: field '{name}' {msg}")

    if not isinstance(data, dict) or "rows" not in data or "dataset" not in data:
        raise FidelityError(f"{where} is not a fidelity dataset: it needs top-level 'dataset' and 'rows' "
                            f"(see docs/fidelity.md).")
    known = {"dataset", "description", "predictor", "hardware", "timing", "origin", "source", "rows", "notes"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise FidelityError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}.")
    for name in ("dataset", "predictor", "hardware", "timing"):
        if not isinstance(data.get(name), str) or not data[name]:
            raise fail(name, "is missing or not a non-empty string.")
    if data["dataset"] != path.stem:
        raise fail("dataset", f"must equal the file's stem '{path.stem}'; got {data['dataset']!r}.")
    if data["predictor"] not in PREDICTORS:
        raise fail("predictor", f"must be one of {', '.join(PREDICTORS)}; got {data['predictor']!r}.")
    if data["timing"] not in TIMINGS:
        raise fail("timing", f"must be one of {', '.join(TIMINGS)}; got {data['timing']!r}.")
    origin = data.get("origin", "measurement")
    if origin not in ORIGINS:
        raise fail("origin", f"must be one of {', '.join(ORIGINS)}; got {origin!r}.")
    rows_raw = data["rows"]
    if not isinstance(rows_raw, list) or not rows_raw:
        raise fail("rows", "must be a non-empty list of measurements.")
    rows, seen = [], set()
    for i, raw in enumerate(rows_raw):
        row = _row(raw, data["predictor"], path.parent, lambda n, m, i=i: fail(f"rows[{i}].{n}", m))
        if row.id in seen:
            raise fail(f"rows[{i}].id", f"repeats the id {row.id!r}.")
        seen.add(row.id)
        rows.append(row)
    return Dataset(name=data["dataset"], path=path, description=str(data.get("description", "")),
                   predictor=data["predictor"], hardware=data["hardware"], timing=data["timing"],
                   source=data.get("source"), rows=tuple(rows), origin=origin)


def load_thresholds(dataset: Dataset) -> dict[str, float]:
    """The regression thresholds kept beside *dataset* (``{}`` when there is no file)."""
    path = dataset.thresholds_path
    if not path.exists():
        return {}
    data = _read(path, "thresholds file")
    if not isinstance(data, dict):
        raise FidelityError(f"thresholds file {path} must be a mapping of {', '.join(THRESHOLD_KEYS)} to numbers.")
    out = {}
    for key, value in data.items():
        if key not in THRESHOLD_KEYS:
            raise FidelityError(f"thresholds file {path}: unknown field '{key}'; known: {', '.join(THRESHOLD_KEYS)}.")
        lo, hi = THRESHOLD_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
            raise FidelityError(f"thresholds file {path}: field '{key}' must be a number in [{lo:g}, {hi:g}]; "
                                f"got {value!r}.")
        out[key] = float(value)
    return out


def _read(path: Path, what: str) -> Any:
    if not path.is_file():
        raise FidelityError(f"{what} {path} does not exist.")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise FidelityError(f"{what} {path} is not valid YAML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FidelityError(f"{what} {path} cannot be read: {exc}") from None


def _number(value: Any, fail, name: str, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or (positive and value <= 0):
        raise fail(name, f"must be a {'positive ' if positive else ''}number; got {value!r}.")
    return float(value)


def _row(raw: Any, predictor: str, base: Path, fail) -> Row:
    if not isinstance(raw, dict):
        raise fail("", f"must be a mapping; got {type(raw).__name__}.")
    common = {"id", "kind", "measured_ms", "spread_ms", "weight", "note"}
    extra = {"eager": {"reference", "inputs"}, "kernel": {"task", "kernel", "shape", "config", "configs"}}[predictor]
    unknown = sorted(set(raw) - common - extra)
    if unknown:
        raise fail(unknown[0], f"is not a field of a {predictor} row; fields: {', '.join(sorted(common | extra))}.")
    for name in ("id", "kind"):
        if not isinstance(raw.get(name), str) or not raw[name]:
            raise fail(name, "is missing or not a non-empty string.")
    values: dict[str, Any] = {"id": raw["id"], "kind": raw["kind"],
                              "measured_ms": _number(raw.get("measured_ms"), fail, "measured_ms"),
                              "note": str(raw.get("note", ""))}
    if "weight" in raw:
        values["weight"] = _number(raw["weight"], fail, "weight")
    if raw.get("spread_ms") is not None:
        s = raw["spread_ms"]
        if not isinstance(s, list) or len(s) != 2:
            raise fail("spread_ms", f"must be [low, high]; got {s!r}.")
        values["spread_ms"] = (_number(s[0], fail, "spread_ms"), _number(s[1], fail, "spread_ms"))
    if predictor == "eager":
        if not isinstance(raw.get("reference"), str) or "def reference" not in raw["reference"]:
            raise fail("reference", "must be Python source defining `def reference(...)`.")
        values["reference"] = raw["reference"]
        inputs = raw.get("inputs")
        if not isinstance(inputs, dict) or not inputs:
            raise fail("inputs", "must map input name -> {shape: [...], dtype: ...}, in argument order.")
        parsed = []
        for name, spec in inputs.items():
            if not isinstance(spec, dict) or not isinstance(spec.get("shape"), list) \
                    or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in spec["shape"]):
                raise fail(f"inputs.{name}", "must have a shape: a list of positive ints ([] for a 0-d tensor).")
            dtype = spec.get("dtype", "float32")
            if dtype not in DTYPES:
                raise fail(f"inputs.{name}.dtype", f"is {dtype!r}; supported: {', '.join(DTYPES)}.")
            parsed.append((str(name), tuple(spec["shape"]), dtype))
        values["inputs"] = tuple(parsed)
    else:
        for name in ("task", "kernel"):
            if not isinstance(raw.get(name), str):
                raise fail(name, "must be a path relative to the dataset file.")
            p = (base / raw[name]).resolve()
            if not p.is_file():
                raise fail(name, f"names {p}, which does not exist.")
            values[name] = p
        shape = raw.get("shape")
        if not isinstance(shape, dict) or not all(isinstance(v, int) and v > 0 for v in shape.values()):
            raise fail("shape", "must map shape symbols to positive ints (one of the task's target shapes).")
        values["shape"] = dict(shape)
        if "configs" in raw:
            if "config" in raw:
                raise fail("configs", "and 'config' are both given: a row ran one config ('config') or the fastest "
                                      "of an autotuned list ('configs'), not both.")
            configs = raw["configs"]
            if not isinstance(configs, list) or not configs:
                raise fail("configs", "must be a non-empty list of configs (each mapping PARAMS names to values): "
                                      "the autotuner's list, of which the row ran the fastest.")
            for j, c in enumerate(configs):
                if not isinstance(c, dict) or not c:
                    raise fail(f"configs[{j}]", "must map PARAMS names to the values of one config.")
                if c in configs[:j]:
                    raise fail(f"configs[{j}]", f"repeats the config {c!r}.")
            values["configs"] = tuple(dict(c) for c in configs)
        else:
            config = raw.get("config", {}) or {}
            if not isinstance(config, dict):
                raise fail("config", "must map PARAMS names to the values that ran.")
            values["config"] = dict(config)
    return Row(**values)
