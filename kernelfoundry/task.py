"""Task files: YAML -> validated :class:`Task`, with errors that name the field.

A task is the spec a kernel must meet: a PyTorch reference, named inputs with
symbolic shapes, small *check* shapes (run in the interpreter for correctness)
and *target* shapes (traced and scored by the performance model), a tolerance,
seed kernels and target hardware.  See ``docs/tasks.md``.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .ast_safe import parse as safe_parse
from .errors import TaskError

FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "bool")
DTYPES = FLOAT_DTYPES + INT_DTYPES
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
               "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
_SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class InputSpec:
    """One positional input of ``reference`` and ``launch``.

    ``shape`` entries are ints or symbol names bound by each shape dict.
    Integer inputs draw uniformly from ``[low, high)`` (``high`` may be a symbol).
    """

    name: str
    shape: tuple[int | str, ...]
    dtype: str
    low: int | str | None = None
    high: int | str | None = None

    def concrete_shape(self, env: dict[str, int]) -> tuple[int, ...]:
        return tuple(d if isinstance(d, int) else int(env[d]) for d in self.shape)

    def bound(self, value: int | str | None, env: dict[str, int]) -> int | None:
        if value is None or isinstance(value, int):
            return value
        return int(env[value])

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES


@dataclass(frozen=True)
class Task:
    """A validated task.  Build with :func:`load_task` or :func:`task_from_dict`."""

    name: str
    level: int
    reference: str
    inputs: tuple[InputSpec, ...]
    check_shapes: tuple[dict[str, int], ...]
    target_shapes: tuple[dict[str, int], ...]
    atol: float
    rtol: float
    seeds: tuple[Path, ...]
    hardware: tuple[str, ...]
    description: str = ""
    models: tuple[dict[str, Any], ...] = ()
    path: Path | None = None
    no_seed_reason: str | None = None     # seeds is empty: why (an LLM drafts the first kernel; docs/llm.md)
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.inputs)

    @property
    def symbols(self) -> tuple[str, ...]:
        seen: list[str] = []
        for spec in self.inputs:
            for d in spec.shape:
                if isinstance(d, str) and d not in seen:
                    seen.append(d)
            for b in (spec.low, spec.high):
                if isinstance(b, str) and b not in seen:
                    seen.append(b)
        return tuple(seen)

    def input_shapes(self, env: dict[str, int]) -> dict[str, tuple[int, ...]]:
        return {spec.name: spec.concrete_shape(env) for spec in self.inputs}

    def input_bytes(self, env: dict[str, int]) -> int:
        return sum(math.prod(spec.concrete_shape(env)) * DTYPE_BYTES[spec.dtype]
                   for spec in self.inputs)

    def seed_sources(self) -> list[tuple[Path, str]]:
        return [(p, p.read_text()) for p in self.seeds]

    def to_dict(self) -> dict[str, Any]:
        """The task as plain data (stored with each run, so a run is self-contained)."""
        return {
            "name": self.name, "level": self.level, "description": self.description,
            "reference": self.reference,
            "inputs": {s.name: {k: v for k, v in (("shape", list(s.shape)), ("dtype", s.dtype),
                                                  ("low", s.low), ("high", s.high)) if v is not None}
                       for s in self.inputs},
            "shapes": {"check": [dict(e) for e in self.check_shapes],
                       "target": [dict(e) for e in self.target_shapes]},
            "tolerance": {"atol": self.atol, "rtol": self.rtol},
            "seeds": [str(p) for p in self.seeds],
            "hardware": list(self.hardware),
            "models": [dict(m) for m in self.models],
            **({"no_seed_reason": self.no_seed_reason} if self.no_seed_reason else {}),
        }


def load_task(path: str | Path, *, check_files: bool = True, allow_no_seed: bool = False) -> Task:
    """Read and validate a task file; raise :class:`TaskError` naming the problem.

    ``check_files=False`` skips the check that the seed kernels exist (for commands that
    do not use them, such as ``verify``).  A ``.py`` path (a KernelBench problem file) is refused:
    :func:`kernelfoundry.kernelbench.load_task_or_problem`, which the commands call, imports one
    (sandboxed) into a cached task file first.  ``allow_no_seed`` (an LLM drafts the first kernel,
    docs/llm.md "Drafts") accepts a task file with ``seeds: []``: the task has no seeds and says why
    in ``no_seed_reason``.
    """
    path = Path(path)
    if path.suffix == ".py":                # a KernelBench problem: the commands import it (sandboxed) first
        raise TaskError(f"{path} is a KernelBench problem file, not a task file; the commands (evolve, verify, "
                        "bench) import it into a task file, and so does "
                        "kernelfoundry.kernelbench.load_task_or_problem (docs/kernelbench.md).")
    data = read_task_yaml(path)
    if allow_no_seed and isinstance(data, dict) and data.get("seeds") == [] and not data.get("no_seed_reason"):
        data = dict(data, no_seed_reason="the task file lists no seed kernels")
    return task_from_dict(data, source=path, check_files=check_files)


def read_task_yaml(path: Path) -> Any:
    """The YAML in task file *path*; a :class:`TaskError` naming what is wrong with the file."""
    if not path.exists():
        raise TaskError(f"task file {path} does not exist.")
    if path.is_dir():
        raise TaskError(f"task file {path} is a directory; give the path of a .yaml task file.")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise TaskError(f"task file {path} is not valid YAML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"task file {path} cannot be read: {exc}") from None


def task_from_dict(data: Any, *, source: Path | None = None, check_files: bool = True) -> Task:
    """Validate plain data (as parsed from YAML) into a :class:`Task`.

    ``check_files=False`` skips the existence check of seed files (workers on
    other machines rebuild the task from ``Task.to_dict()`` and never read seeds).
    ``seeds`` may be empty only with a ``no_seed_reason`` (a task whose first kernel an LLM drafts).
    """
    where = f"task file {source}" if source else "task"
    base_dir = source.parent if source else Path.cwd()

    def fail(field_name: str, msg: str) -> TaskError:
        return TaskError(f"{where}: field '{field_name}' {msg}")

    if not isinstance(data, dict):
        raise TaskError(f"{where} must be a YAML mapping with fields name, reference, inputs, "
                        f"shapes, tolerance, seeds, hardware; got {type(data).__name__}.")
    known = {"name", "level", "description", "reference", "inputs", "shapes", "tolerance",
             "seeds", "hardware", "models", "no_seed_reason"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise TaskError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; "
                        f"known fields are {', '.join(sorted(known))}.")
    for required in ("name", "reference", "inputs", "shapes", "seeds"):
        if required not in data:
            raise fail(required, "is missing.")

    name = data["name"]
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise fail("name", f"must be a string of letters, digits, '_', '.', '-'; got {name!r}.")
    level = data.get("level", 1)
    if not isinstance(level, int) or level not in (1, 2, 3):
        raise fail("level", f"must be 1, 2 or 3 (KernelBench levels); got {level!r}.")

    reference = data["reference"]
    if not isinstance(reference, str):
        raise fail("reference", "must be Python source defining `def reference(...)`.")
    _check_reference(reference, fail)

    inputs = _parse_inputs(data["inputs"], fail)
    symbols = {d for s in inputs for d in (*s.shape, s.low, s.high) if isinstance(d, str)}
    check_shapes, target_shapes = _parse_shapes(data["shapes"], symbols, fail)
    for spec in inputs:
        for kind, envs in (("check", check_shapes), ("target", target_shapes)):
            for i, env in enumerate(envs):
                low, high = spec.bound(spec.low, env), spec.bound(spec.high, env)
                if low is not None and high is not None and low >= high:
                    raise fail(f"inputs.{spec.name}", f"draws from [low, high) = [{low}, {high}) at "
                               f"shapes.{kind}[{i}], which is empty: low must be below high.")

    tol = data.get("tolerance", {"atol": 1e-4, "rtol": 1e-4})
    if not isinstance(tol, dict) or set(tol) - {"atol", "rtol"}:
        raise fail("tolerance", f"must be a mapping with atol and rtol; got {tol!r}.")
    try:
        atol, rtol = float(tol.get("atol", 1e-4)), float(tol.get("rtol", 1e-4))
    except (TypeError, ValueError):
        raise fail("tolerance", f"atol and rtol must be numbers; got {tol!r}.") from None
    if not (0 <= atol < math.inf and 0 <= rtol < math.inf):
        raise fail("tolerance", f"atol and rtol must be finite and non-negative; got atol={atol}, rtol={rtol}.")

    no_seed_reason = data.get("no_seed_reason")
    if no_seed_reason is not None and (not isinstance(no_seed_reason, str) or not no_seed_reason.strip()):
        raise fail("no_seed_reason", f"must be a sentence saying why the task has no seed; got {no_seed_reason!r}.")
    seeds_raw = data["seeds"]
    if not isinstance(seeds_raw, list) or not (seeds_raw or no_seed_reason):
        raise fail("seeds", "must be a non-empty list of kernel file paths (relative to the task file); "
                            "an empty list only with an LLM (--model), which drafts the first kernel.")
    seeds = []
    for i, s in enumerate(seeds_raw):
        if not isinstance(s, str):
            raise fail(f"seeds[{i}]", f"must be a path string; got {s!r}.")
        p = (base_dir / s).resolve()
        if check_files and not p.is_file():
            what = "a directory, not a kernel file" if p.is_dir() else "which does not exist"
            raise fail(f"seeds[{i}]", f"names {p}, {what}.")
        seeds.append(p)

    hardware = data.get("hardware", ["h100"])
    if isinstance(hardware, str):
        hardware = [h.strip() for h in hardware.split(",") if h.strip()]
    if not isinstance(hardware, list) or not hardware or not all(isinstance(h, str) for h in hardware):
        raise fail("hardware", f"must be a non-empty list of hardware names; got {hardware!r}.")

    models = data.get("models", []) or []
    if not isinstance(models, list):
        raise fail("models", "must be a list of model names or mappings with a 'name'.")
    models_norm = []
    for i, m in enumerate(models):
        if isinstance(m, str):
            m = {"name": m}
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            raise fail(f"models[{i}]", f"must be a model name or a mapping with 'name'; got {m!r}.")
        models_norm.append(dict(m))

    return Task(name=name, level=level, reference=reference, inputs=tuple(inputs),
                check_shapes=tuple(check_shapes), target_shapes=tuple(target_shapes),
                atol=atol, rtol=rtol, seeds=tuple(seeds), hardware=tuple(hardware),
                description=str(data.get("description", "")), models=tuple(models_norm),
                path=source, raw=dict(data), no_seed_reason=None if seeds else no_seed_reason)


def _check_reference(reference: str, fail) -> None:
    try:
        tree = safe_parse(reference)
    except SyntaxError as exc:
        raise fail("reference", f"is not valid Python: line {exc.lineno}: {exc.msg}.") from None
    if not any(isinstance(n, ast.FunctionDef) and n.name == "reference" for n in tree.body):
        raise fail("reference", "must define a top-level function `reference(...)`.")


def _parse_inputs(raw: Any, fail) -> list[InputSpec]:
    if not isinstance(raw, dict) or not raw:
        raise fail("inputs", "must be a mapping of input name -> {shape: [...], dtype: ...}, in launch order.")
    specs = []
    for name, spec in raw.items():
        key = f"inputs.{name}"
        if not isinstance(name, str) or not _SYMBOL.match(name):
            raise fail(key, "must be named by a Python identifier.")
        if not isinstance(spec, dict) or "shape" not in spec:
            raise fail(key, "must be a mapping with 'shape' and 'dtype'.")
        extra = set(spec) - {"shape", "dtype", "low", "high"}
        if extra:
            raise fail(key, f"has unknown key(s) {sorted(extra)}; allowed: shape, dtype, low, high.")
        shape = spec["shape"]
        if not isinstance(shape, list) or not shape:
            raise fail(f"{key}.shape", f"must be a non-empty list of ints or symbol names; got {shape!r}.")
        dims: list[int | str] = []
        for d in shape:
            if isinstance(d, bool) or not (isinstance(d, int) and d > 0 or isinstance(d, str) and _SYMBOL.match(d)):
                raise fail(f"{key}.shape", f"entry {d!r} is neither a positive int nor a symbol name.")
            dims.append(d)
        dtype = spec.get("dtype", "float32")
        if dtype not in DTYPES:
            raise fail(f"{key}.dtype", f"is {dtype!r}; supported: {', '.join(DTYPES)}.")
        low, high = spec.get("low"), spec.get("high")
        for bname, b in (("low", low), ("high", high)):
            if b is not None and (isinstance(b, bool) or not isinstance(b, (int, str))):
                raise fail(f"{key}.{bname}", f"must be an int or a symbol name; got {b!r}.")
        if dtype in INT_DTYPES and dtype != "bool" and (low is None or high is None):
            raise fail(key, f"is an integer input ({dtype}); give its value range with 'low' and 'high'.")
        specs.append(InputSpec(name=name, shape=tuple(dims), dtype=dtype, low=low, high=high))
    return specs


def _parse_shapes(raw: Any, symbols: set[str], fail) -> tuple[list[dict], list[dict]]:
    if not isinstance(raw, dict) or set(raw) - {"check", "target"}:
        raise fail("shapes", "must be a mapping with 'check' and 'target' lists of symbol bindings.")
    out = []
    for kind in ("check", "target"):
        envs = raw.get(kind)
        if not isinstance(envs, list) or not envs:
            raise fail(f"shapes.{kind}", "must be a non-empty list of mappings like {M: 64, N: 1000}.")
        parsed = []
        for i, env in enumerate(envs):
            key = f"shapes.{kind}[{i}]"
            if not isinstance(env, dict):
                raise fail(key, f"must be a mapping of symbol -> int; got {env!r}.")
            missing = symbols - set(env)
            if missing:
                raise fail(key, f"does not bind symbol(s) {sorted(missing)}.")
            extra = set(env) - symbols
            if extra:
                raise fail(key, f"binds unknown symbol(s) {sorted(extra)}; the inputs use {sorted(symbols)}.")
            for s, v in env.items():
                if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                    raise fail(f"{key}.{s}", f"must be a positive int; got {v!r}.")
            parsed.append(dict(env))
        out.append(parsed)
    return out[0], out[1]


def main(argv: list[str] | None = None) -> int:
    """``python -m kernelfoundry.task``: the task-file command moved to the command layer (it imports
    problem files, which the task layer must not reach); say where, run nothing."""
    import sys
    print("The task command is now `kernelfoundry task import PROBLEM.py [--out TASK.yaml]` "
          "(or `python -m kernelfoundry.kernelbench import PROBLEM.py ...`); see docs/kernelbench.md.",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    import sys
    sys.exit(main())
