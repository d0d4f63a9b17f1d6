"""Launch signatures: one kernel launch as Triton's compiler sees it, in a JSON-able record.

A record names the kernel, lists every parameter in order with what Triton
specialises on, and gives the launch options::

    {"kernel": "softmax_kernel",
     "args": [{"name": "x_ptr", "kind": "pointer", "dtype": "fp32", "div16": true},
              {"name": "n_cols", "kind": "int", "dtype": "i32", "div16": false, "equals_one": false},
              {"name": "eps", "kind": "float", "dtype": "fp32"},
              {"name": "BLOCK_N", "kind": "constexpr", "value": 1024}],
     "num_warps": 4, "num_stages": 2}

Kinds and their fields (dtype names as Triton writes them):

* ``pointer``: ``dtype`` (the element type: fp16, bf16, fp32, i32, i1, fp8e4nv, ...),
  ``div16`` (the address is a multiple of 16 bytes), optional ``range32`` (the
  tensor's storage is under 2 GiB; AMD uses buffer loads then; default false);
* ``int``: ``dtype`` (i32, i64, u64, u1 for a Python bool, ...), ``div16``,
  ``equals_one`` (Triton turns an int equal to 1 into the constant 1);
* ``float``: ``dtype`` (fp32 for a Python float; fp16/bf16/fp64 when annotated);
* ``constexpr``: ``value`` (a JSON scalar, a list for a tuple, ``null`` for None,
  or ``{"dtype": "fp16"}`` for a ``tl.dtype``).

Launch options: ``num_warps`` (a power of two, 1-32) and ``num_stages`` (1-8, or
null for the backend's default) are required keys; ``num_ctas`` (default 1),
``maxnreg`` (default null) and ``enable_fp_fusion`` (default true, Triton 3.9's
launch default) are optional.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Callable

#: Element types a pointer argument may point to.
POINTER_DTYPES = ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16", "fp16", "bf16", "fp32", "fp64",
                  "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
INT_DTYPES = ("u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOAT_DTYPES = ("fp16", "bf16", "fp32", "fp64")
KINDS = ("pointer", "int", "float", "constexpr")
REQUIRED_KEYS = ("kernel", "args", "num_warps", "num_stages")
OPTIONAL_KEYS = ("num_ctas", "maxnreg", "enable_fp_fusion")
_ARG_KEYS = {"pointer": ("name", "kind", "dtype", "div16", "range32"),
             "int": ("name", "kind", "dtype", "div16", "equals_one"),
             "float": ("name", "kind", "dtype"),
             "constexpr": ("name", "kind", "value")}
_REQUIRED_ARG_KEYS = {"pointer": ("dtype", "div16"), "int": ("dtype", "div16", "equals_one"),
                      "float": ("dtype",), "constexpr": ("value",)}


class SignatureError(ValueError):
    """A launch-signature record is malformed; the message names the record and field."""


@dataclass(frozen=True)
class ArgSpec:
    """One kernel parameter of a launch (see the module docstring for the kinds)."""

    name: str
    kind: str
    dtype: str = ""
    div16: bool = False
    equals_one: bool = False
    range32: bool = False
    value: Any = None

    def to_dict(self) -> dict[str, Any]:
        full = {"name": self.name, "kind": self.kind, "dtype": self.dtype, "div16": self.div16,
                "equals_one": self.equals_one, "range32": self.range32, "value": self.value}
        out = {k: full[k] for k in _ARG_KEYS[self.kind]}
        if self.kind == "pointer" and not self.range32:
            out.pop("range32")
        return out


@dataclass(frozen=True)
class LaunchSignature:
    """What Triton compiles for one launch: the kernel, its specialised parameters, the options."""

    kernel: str
    args: tuple[ArgSpec, ...]
    num_warps: int
    num_stages: int | None
    num_ctas: int = 1
    maxnreg: int | None = None
    enable_fp_fusion: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kernel": self.kernel, "args": [a.to_dict() for a in self.args],
                               "num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.num_ctas != 1:
            out["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            out["maxnreg"] = self.maxnreg
        if not self.enable_fp_fusion:
            out["enable_fp_fusion"] = False
        return out

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "launch signature") -> "LaunchSignature":
        return parse_signature(data, where=where)

    def canonical(self) -> str:
        """Canonical JSON text (sorted keys): equal for equal records; the cache key uses it."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    def digest(self) -> str:
        return hashlib.sha256(self.canonical().encode()).hexdigest()[:16]

    def options(self) -> dict[str, Any]:
        """The Triton compile options of this launch (num_stages left out when null)."""
        out: dict[str, Any] = {"num_warps": self.num_warps, "num_ctas": self.num_ctas,
                               "enable_fp_fusion": self.enable_fp_fusion}
        if self.num_stages is not None:
            out["num_stages"] = self.num_stages
        if self.maxnreg is not None:
            out["maxnreg"] = self.maxnreg
        return out

    def describe(self) -> str:
        """Short text for reports: ``softmax_kernel(BLOCK_N=1024; num_warps=4, num_stages=2)``."""
        consts = [f"{a.name}={_show(a.value)}" for a in self.args if a.kind == "constexpr"]
        consts += [f"{a.name}=1" for a in self.args if a.kind == "int" and a.equals_one]
        hints = f"num_warps={self.num_warps}, num_stages={self.num_stages}"
        return f"{self.kernel}({', '.join(consts)}{'; ' if consts else ''}{hints})"

    def triton_inputs(self, parse_attr: Callable[[str], list]) -> tuple[dict[str, str], dict[str, Any], dict]:
        """``(signature, constexprs, attrs)`` for ``triton.compiler.ASTSource``.

        *parse_attr* is the target backend's ``parse_attr`` (turns "D"/"S" into
        ``tt.divisibility`` / ``tt.pointer_range`` attributes).  Constexpr values
        are decoded to Python values (``{"dtype": ...}`` becomes a ``tl.dtype``).
        """
        signature: dict[str, str] = {}
        constexprs: dict[str, Any] = {}
        attrs: dict[tuple[int], list] = {}
        for i, arg in enumerate(self.args):
            desc = None
            if arg.kind == "constexpr":
                signature[arg.name] = "constexpr"
                constexprs[arg.name] = decode_constexpr(arg.value)
            elif arg.kind == "int" and arg.equals_one:
                signature[arg.name] = "constexpr"
                constexprs[arg.name] = 1
            elif arg.kind == "pointer":
                signature[arg.name] = "*" + arg.dtype
                desc = ("D" if arg.div16 else "") + ("S" if arg.range32 else "")
            elif arg.kind == "int":
                signature[arg.name] = arg.dtype
                desc = "D" if arg.div16 else ""
            else:
                signature[arg.name] = arg.dtype
            if desc:
                parsed = parse_attr(desc)
                if parsed:
                    attrs[(i,)] = parsed
        return signature, constexprs, attrs


def _show(value: Any) -> str:
    if isinstance(value, dict) and "dtype" in value:
        return str(value["dtype"])
    return json.dumps(value) if isinstance(value, (str, list)) else str(value)


def decode_constexpr(value: Any) -> Any:
    """A record's constexpr value as Triton wants it (lists -> tuples, {"dtype": n} -> tl.dtype)."""
    if isinstance(value, dict):
        import triton.language as tl
        return tl.dtype(value["dtype"])
    if isinstance(value, list):
        return tuple(decode_constexpr(v) for v in value)
    return value


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_constexpr_value(value: Any, fail, depth: int = 0) -> None:
    if depth > 4:
        fail("value", "nests lists too deeply")
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        return
    if isinstance(value, list):
        for v in value:
            _check_constexpr_value(v, fail, depth + 1)
        return
    if isinstance(value, dict):
        dtype = value.get("dtype")
        if set(value) != {"dtype"} or dtype not in POINTER_DTYPES + ("u1",):
            fail("value", f"as an object must be {{\"dtype\": <Triton dtype>}}; got {value!r}")
        return
    fail("value", f"must be a JSON scalar, list, null or {{\"dtype\": ...}}; got {type(value).__name__}")


def _parse_arg(raw: Any, index: int, where: str) -> ArgSpec:
    here = f"{where}: args[{index}]"

    def fail(field: str, msg: str):
        raise SignatureError(f"{here} field '{field}' {msg}.")

    if not isinstance(raw, dict):
        raise SignatureError(f"{here} must be an object with name, kind, ...; got {type(raw).__name__}.")
    name = raw.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        fail("name", f"must be the parameter's identifier; got {name!r}")
    here = f"{where}: args[{index}] ('{name}')"
    kind = raw.get("kind")
    if kind not in KINDS:
        fail("kind", f"must be one of {', '.join(KINDS)}; got {kind!r}")
    unknown = sorted(set(raw) - set(_ARG_KEYS[kind]))
    if unknown:
        fail(unknown[0], f"is not a field of a {kind} argument (fields: {', '.join(_ARG_KEYS[kind])})")
    for key in _REQUIRED_ARG_KEYS[kind]:
        if key not in raw:
            fail(key, f"is missing (required for a {kind} argument)")
    for key in ("div16", "equals_one", "range32"):
        if key in raw and not isinstance(raw[key], bool):
            fail(key, f"must be true or false; got {raw[key]!r}")
    dtype = raw.get("dtype", "")
    allowed = {"pointer": POINTER_DTYPES, "int": INT_DTYPES, "float": FLOAT_DTYPES}.get(kind)
    if allowed is not None and dtype not in allowed:
        fail("dtype", f"must be a Triton {kind} dtype ({', '.join(allowed)}); got {dtype!r}")
    if kind == "constexpr":
        _check_constexpr_value(raw["value"], fail)
        if isinstance(raw["value"], float) and not math.isfinite(raw["value"]):
            fail("value", "must be finite")
    if kind == "int" and raw["equals_one"] and raw["div16"]:
        fail("equals_one", "and div16 cannot both be true (1 is not a multiple of 16)")
    return ArgSpec(name=name, kind=kind, dtype=dtype, div16=bool(raw.get("div16", False)),
                   equals_one=bool(raw.get("equals_one", False)), range32=bool(raw.get("range32", False)),
                   value=raw.get("value"))


def parse_signature(data: Any, *, where: str = "launch signature") -> LaunchSignature:
    """Validate a JSON-able record into a :class:`LaunchSignature`; errors name *where* and the field."""
    if isinstance(data, LaunchSignature):
        return data
    if not isinstance(data, dict):
        raise SignatureError(f"{where} must be an object with {', '.join(REQUIRED_KEYS)}; "
                             f"got {type(data).__name__}.")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise SignatureError(f"{where} is missing field(s) {', '.join(map(repr, missing))}.")
    unknown = sorted(set(data) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise SignatureError(f"{where} has unknown field(s) {', '.join(map(repr, unknown))}; known: "
                             f"{', '.join(REQUIRED_KEYS + OPTIONAL_KEYS)}.")
    kernel = data["kernel"]
    if not isinstance(kernel, str) or not kernel.isidentifier():
        raise SignatureError(f"{where} field 'kernel' must be the kernel's function name; got {kernel!r}.")
    where = f"{where} ({kernel})"
    raw_args = data["args"]
    if not isinstance(raw_args, list):
        raise SignatureError(f"{where} field 'args' must be a list of argument objects.")
    args = tuple(_parse_arg(a, i, where) for i, a in enumerate(raw_args))
    names = [a.name for a in args]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SignatureError(f"{where} field 'args' names {', '.join(dupes)} more than once.")
    warps = data["num_warps"]
    if not _is_int(warps) or warps < 1 or warps > 32 or warps & (warps - 1):
        raise SignatureError(f"{where} field 'num_warps' must be a power of two in 1..32; got {warps!r}.")
    stages = data["num_stages"]
    if stages is not None and (not _is_int(stages) or not 1 <= stages <= 8):
        raise SignatureError(f"{where} field 'num_stages' must be an int in 1..8 or null; got {stages!r}.")
    ctas = data.get("num_ctas", 1)
    if not _is_int(ctas) or ctas not in (1, 2, 4, 8, 16):
        raise SignatureError(f"{where} field 'num_ctas' must be 1, 2, 4, 8 or 16; got {ctas!r}.")
    maxnreg = data.get("maxnreg")
    if maxnreg is not None and (not _is_int(maxnreg) or not 16 <= maxnreg <= 255):
        raise SignatureError(f"{where} field 'maxnreg' must be an int in 16..255 or null; got {maxnreg!r}.")
    fusion = data.get("enable_fp_fusion", True)
    if not isinstance(fusion, bool):
        raise SignatureError(f"{where} field 'enable_fp_fusion' must be true or false; got {fusion!r}.")
    return LaunchSignature(kernel=kernel, args=args, num_warps=warps, num_stages=stages, num_ctas=ctas,
                           maxnreg=maxnreg, enable_fp_fusion=fusion)
