"""The sandboxed import job: run a KernelBench problem file and describe it as a task.

``python -m kernelfoundry.kernelbench.inspect_job IN.json OUT.json``, run only through
``run_sandboxed`` (the file is user code).  payload = {"source": str, "filename": str,
"seed": int}.  result = {"error": str} or the description :mod:`.importer` turns into a
task: inputs (symbolic shapes, dtypes, roles), symbols, check shapes, constructor
arguments, forward's arguments, the reference source, and the aten graphs at two check
shapes for the seed generator (or why there are none).

Shapes come from ``get_inputs()`` and ``Model(*get_init_inputs())`` on the meta device, so
multi-GB problems cost nothing.  The reference is then checked against ``Model`` itself on
CPU at every check shape (the Model initialised from ``torch.manual_seed(seed)``).
"""

from __future__ import annotations

import inspect
import json
import math
import re
import sys
import traceback
from dataclasses import replace
from typing import Any

import torch

from . import budget, shrink
from .identity import int_globals, probe as probe_identity
from .reference import reference_source

DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64",
          torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8",
          torch.uint8: "uint8", torch.bool: "bool"}


class Refused(Exception):
    """The problem cannot be imported; the message says why."""


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"


def _load(source: str, filename: str) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "kf_problem", "__file__": filename}
    try:
        exec(compile(source, filename, "exec"), ns)
    except Exception as exc:  # noqa: BLE001 - user code
        raise Refused(f"the file fails to run: {_short(exc)}") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(ns.get(name)):
            raise Refused(f"it defines no `{name}` (a KernelBench problem has class Model(nn.Module), "
                          "get_inputs() and get_init_inputs())")
    if not (isinstance(ns["Model"], type) and issubclass(ns["Model"], torch.nn.Module)):
        raise Refused("`Model` is not a torch.nn.Module subclass")
    return ns


def _plain(value: Any, what: str) -> Any:
    """A constructor/forward argument as JSON (tuples tagged); tensors are refused."""
    if isinstance(value, torch.Tensor):
        raise Refused(f"{what} is a tensor; only numbers, strings, None and lists/tuples of them can be "
                      "folded into the reference")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_plain(v, what) for v in value]}
    if isinstance(value, list):
        return [_plain(v, what) for v in value]
    raise Refused(f"{what} is a {type(value).__name__}, which cannot be folded into the reference")


def _forward_names(model_cls: type, n: int) -> list[str]:
    params = list(inspect.signature(model_cls.forward).parameters.values())[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def _identifier(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name).strip("_") or "p"
    base = base if not base[0].isdigit() else f"p_{base}"
    out, k = base, 2
    while out in taken or out in ("reference", "env", "init", "model", "state", "torch"):
        out, k = f"{base}_{k}", k + 1
    taken.add(out)
    return out


FLOATS = ("float32", "float16", "bfloat16", "float64")
#: tensor methods and functions that keep their input's integer values (a cast, a view, a copy)
_KEEPS = {"long", "int", "short", "to", "type", "clone", "contiguous", "view", "reshape", "expand", "unsqueeze",
          "squeeze", "t", "permute", "transpose", "flatten", "detach", "repeat", "expand_as", "view_as",
          "reshape_as", "cuda", "cpu", "__getitem__"}


class _Ranges(torch.overrides.TorchFunctionMode):
    """While ``get_inputs()`` runs (on the meta device), the integer value range ``(low, high)``
    of each tensor it builds, read off the call that made it: ``torch.randint(lo, hi, ...)``,
    ``randint_like``, ``randperm(n)``, ``arange``, ``zeros``/``ones``/``full``, ``torch.tensor``
    of ints, and what casts, views, ``% c``, ``clamp`` and ``+ c`` make of them.  Bools need
    none (the verifier draws fair coin flips)."""

    def __init__(self):
        super().__init__()
        self.ranges: dict[int, tuple[int, int]] = {}
        self.keep: list[torch.Tensor] = []          # ids stay unique while the mode lives
        self.made: dict[int, str] = {}              # tensor id -> the call that made it (for error messages)

    def of(self, t: Any) -> tuple[int, int] | None:
        return self.ranges.get(id(t)) if isinstance(t, torch.Tensor) else None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if isinstance(out, torch.Tensor):
            name = getattr(func, "__name__", str(func))
            try:
                rng = self._rule(name, args, kwargs)
            except Exception:  # noqa: BLE001 - unusual arguments: no range
                rng = None
            self.keep.append(out)
            self.made[id(out)] = name
            if rng is not None and not out.dtype.is_floating_point and out.dtype != torch.bool:
                self.ranges[id(out)] = rng
        return out

    def _rule(self, name: str, args: tuple, kw: dict) -> tuple[int, int] | None:
        ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
        if name == "randint":                 # randint(high, size) / randint(low, high, size)
            lo, hi = (kw.get("low", 0), kw["high"]) if "high" in kw else (0, ints[0]) if len(ints) == 1 \
                else (ints[0], ints[1])
            return int(lo), int(hi)
        if name == "randint_like":
            rest = [a for a in args[1:] if isinstance(a, int)]
            lo, hi = (0, rest[0]) if len(rest) == 1 else (rest[0], rest[1]) if rest else (kw.get("low", 0),
                                                                                           kw["high"])
            return int(lo), int(hi)
        if name == "randperm":
            return 0, int(args[0])
        if name == "arange":
            nums = [a for a in args if isinstance(a, (int, float))] or [kw.get("end")]
            start, end = (0, nums[0]) if len(nums) == 1 else (nums[0], nums[1])
            return (int(start), int(math.ceil(end))) if end > start else None
        if name in ("zeros", "zeros_like"):
            return 0, 1
        if name in ("ones", "ones_like"):
            return 1, 2
        if name in ("full", "full_like"):
            v = args[1] if len(args) > 1 else kw.get("fill_value")
            return (int(v), int(v) + 1) if isinstance(v, (int, float)) else None
        if name in ("tensor", "as_tensor", "LongTensor", "IntTensor"):
            flat = torch.tensor(args[0], device="cpu").reshape(-1)
            return (int(flat.min()), int(flat.max()) + 1) if flat.numel() else None
        src = self.of(args[0]) if args else None
        if src is None:
            return None
        if name in _KEEPS:
            return src
        other = args[1] if len(args) > 1 else None
        if name in ("__mod__", "remainder", "fmod") and isinstance(other, int) and other > 0 and src[0] >= 0:
            return 0, min(other, src[1])
        if name in ("__add__", "__radd__", "add") and isinstance(other, int):
            return src[0] + other, src[1] + other
        if name in ("__sub__", "sub") and isinstance(other, int):
            return src[0] - other, src[1] - other
        if name in ("clamp", "clip"):
            lo = args[1] if len(args) > 1 else kw.get("min")
            hi = args[2] if len(args) > 2 else kw.get("max")
            return (max(src[0], int(lo)) if lo is not None else src[0], min(src[1], int(hi) + 1) if hi is not None
                    else src[1])
        return None


def _run_inputs(ns: dict[str, Any], seed: int, device: str) -> tuple[list[Any], list[Any], _Ranges]:
    """get_inputs() on *device* with the value ranges of the tensors it returns (None where unknown)."""
    recorder = _Ranges()
    with torch.device(device), recorder:
        torch.manual_seed(seed)
        values = list(ns["get_inputs"]())
    return values, [recorder.of(v) for v in values], recorder


def describe(source: str, filename: str, seed: int) -> dict[str, Any]:
    ns = _load(source, filename)
    try:
        forward_values, ranges, recorder = _run_inputs(ns, seed, "meta")
        with torch.device("meta"):
            torch.manual_seed(seed)
            init_values = list(ns["get_init_inputs"]())
    except Exception as exc:  # noqa: BLE001
        raise Refused(f"get_inputs()/get_init_inputs() cannot run on the meta device ({_short(exc)}); "
                      "shapes must not depend on data") from None
    init = [_plain(v, f"get_init_inputs()[{i}]") for i, v in enumerate(init_values)]
    try:
        with torch.device("meta"):
            model = ns["Model"](*init_values)
    except Exception as exc:  # noqa: BLE001
        raise Refused(f"Model(*get_init_inputs()) cannot be built on the meta device ({_short(exc)})") from None
    taken: set[str] = set()
    inputs, call_args = [], []
    for name, value, rng in zip(_forward_names(ns["Model"], len(forward_values)), forward_values, ranges):
        if isinstance(value, torch.Tensor):
            inputs.append({"name": _identifier(name, taken), "shape": list(value.shape), "dtype": value.dtype,
                           "role": "input", "range": rng, "made_by": recorder.made.get(id(value), "?")})
            call_args.append({"input": inputs[-1]["name"], "name": inputs[-1]["name"]})
        else:
            call_args.append({"const": _plain(value, f"forward argument '{name}' from get_inputs()"),
                              "name": _identifier(name, taken)})
    for role, items in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
        for attr, t in items:                     # a 0-d one is a [1] input, viewed as 0-d by the reference
            inputs.append({"name": _identifier(attr, taken), "shape": list(t.shape) or [1], "dtype": t.dtype,
                           "role": role, "module_attr": attr, "scalar": t.dim() == 0})
    if not any(s["role"] == "input" for s in inputs):
        raise Refused("get_inputs() returns no tensor")
    for s in inputs:
        if s["dtype"] not in DTYPES:
            raise Refused(f"input '{s['name']}' has dtype {s['dtype']}, which tasks do not support")
        if not s["shape"] or 0 in s["shape"]:
            raise Refused(f"forward input '{s['name']}' is {'0-d' if not s['shape'] else 'empty'}; task inputs "
                          "have at least one non-empty dim")
        s["dtype"] = DTYPES[s["dtype"]]
        s["target"] = s["shape"]
    # A dim of a parameter the Model fixes itself (a channel count written in its constructor) that
    # equals another size by chance, or is merely large, first becomes a symbol; the check sizes show
    # it does not follow them: retry with it literal (and, if dims of that size must agree, all of them)
    # Dims share a symbol where the problem's own variables say they are one size (identity.py);
    # where that import fails, dims of equal value share one (the Model may tie them in ways a
    # probe on the meta device misses)
    try:
        ident = probe_identity(ns, seed, inputs, init, _plain, shrink.KEEP_AT_MOST)
    except Exception:  # noqa: BLE001 - user code: no identity, value keys
        ident = None
    for attempt in ([ident, None] if ident is not None else [None]):
        literal: set[tuple[str, int]] = set()
        fixed_values: set[int] = set()
        widened = False
        try:
            while True:
                try:
                    out, divisors = _symbolic(ns, source, filename, seed, inputs, init, call_args, literal, attempt)
                    break
                except _FixedDims as exc:
                    if exc.positions <= literal:
                        raise Refused(str(exc)) from None
                    literal |= exc.positions
                    fixed_values |= exc.values
                except Refused:
                    if not fixed_values or widened:
                        raise
                    literal |= {(s["name"], d) for s in inputs for d, v in enumerate(s["target"])
                                if v in fixed_values}
                    widened = True
            break
        except _Random:
            raise
        except Refused:
            if attempt is None:
                raise
    from .graph import capture
    from .sizes import probe_env
    ladders, at_least = {}, out.pop("at_least")
    for s, v in out["symbols"].items():
        ladders[s] = shrink.ladder(v, divisors, at_least)
        if out["check"][0][s] not in ladders[s]:         # check_shapes dropped divisibility (too large)
            ladders[s] = shrink.ladder(v, [], at_least)
        if out["check"][0][s] not in ladders[s]:         # below the ladder (the work budget): a size above
            kept = [d for d in divisors if d > 1 and out["check"][0][s] % d == 0]      # (a group count it still has)
            ladders[s] = [x for x in budget.lower_sizes(v, kept, at_least) if x > out["check"][0][s]][:6]
    probe = probe_env(out["symbols"], out["check"][0], ladders)
    out["trace_envs"] = [out["check"][0], probe]
    out["graphs"], out["graph_error"] = capture(out["reference"], inputs, out["trace_envs"])
    for s in inputs:
        s.pop("range", None)
        s.pop("made_by", None)
    return out


class _Random(Refused):
    """The reference's outputs change with the random seed (no other check size helps)."""


class _FixedDims(Refused):
    """Dims of Model parameters stayed at their target size at a check shape: constants of the Model."""

    def __init__(self, message: str, positions: set[tuple[str, int]], values: set[int]):
        super().__init__(message)
        self.positions, self.values = positions, values


def _symbolic(ns, source, filename, seed, inputs, init, call_args, literal, ident=None):
    """Size symbols (dims at *literal* positions kept), the reference, check shapes, validated.
    With *ident* (identity.py) dims share a symbol by key; a check shape over the interpreter's
    work budget (budget.py) shrinks further, first with the problem's free small sizes (a batch
    of 16) as symbols too."""
    rounds = [replace(ident, small=set()), ident] if ident is not None and ident.small else [ident]
    for k, key_of in enumerate(rounds):
        out, divs = _symbolic_round(ns, source, filename, seed, inputs, init, call_args, literal, key_of,
                                    last=k == len(rounds) - 1)
        if out is not None:
            return out, divs
    raise AssertionError("unreachable: the last round returns or raises")


def _symbolic_round(ns, source, filename, seed, inputs, init, call_args, literal, ident, last):
    shapes = {s["name"]: s["target"] for s in inputs}
    symbols, symbolic = shrink.assign_symbols(shapes, literal, ident)
    if ident is not None:
        keys = shrink.symbol_keys(shapes, symbolic, ident)
        sym_init = shrink.symbolize(init, symbols, keys, ident)
        global_syms = {g: keys[ident.globals.get(g, ("v", v))] for g, v in int_globals(ns).items()
                       if ident.globals.get(g, ("v", v)) in keys}
    else:
        sym_init, global_syms = [shrink.symbolize(v, symbols) for v in init], None
    divisors = [c for v in sym_init for c in shrink.constants_in(v)]
    for s in inputs:
        s["shape"] = symbolic[s["name"]]
        s.pop("low", None)
        s.pop("high", None)
    reference = reference_source(source, inputs=inputs, symbols=symbols, init=sym_init, call_args=call_args)
    out = {"inputs": inputs, "symbols": symbols, "init": sym_init, "call_args": call_args, "reference": reference,
           "global_syms": global_syms}
    rns: dict[str, Any] = {"__name__": "kf_reference_work"}
    exec(compile(reference, "<reference>", "exec"), rns)

    def cost(env: dict[str, int]) -> float | None:
        return budget.work(rns["reference"], inputs, env)
    # first try: the constructor's small ints divide the sizes they divide; then, for a size
    # constraint the constructor does not show (a group count fixed in forward), every power-of-two
    # factor up to 256 of the target sizes; last, sizes of at least 48 (a wide dilated kernel)
    tries = [(divisors, 2), (divisors + [2 ** k for k in range(1, 9)], 2), (divisors, 48)]
    first = None
    for divs, at_least in tries:
        try:
            envs = shrink.check_shapes(symbols, symbolic, divs, at_least)
            envs = [budget.fit(e, symbols, divs, at_least, budget.BUDGET[min(i, 1)], cost)
                    for i, e in enumerate(envs)]
            if not last and any((cost(e) or 0) > budget.BUDGET[min(i, 1)] for i, e in enumerate(envs)):
                return None, divs                     # over budget: the next round, small sizes as symbols
            if len(envs) < 2 or envs[0] == envs[1]:   # the budget made them one: a second, wider one
                envs = [envs[0], budget.widen(envs[0], symbols, divs, at_least, budget.BUDGET[1], cost)]
            if at_least > 2:
                envs = _relaxed(envs, symbols, divs, cost)
            out["check"] = envs if envs[0] != envs[1] else envs[:1]
            if at_least > 2 and first is not None and max(
                    math.prod(env[d] if isinstance(d, str) else d for d in dims)
                    for env in out["check"] for dims in symbolic.values()) > shrink.HARD_CAP:
                break                                 # too large to run (a 3D volume of 48^3 and more)
            _validate(ns, source, filename, out, seed)
            out["at_least"] = at_least
            return out, divs
        except (_FixedDims, _Random):
            raise
        except Refused as exc:
            first = first or exc
    raise first


def _relaxed(envs: list[dict[str, int]], symbols: dict[str, int], divisors: list[int],
             cost) -> list[dict[str, int]]:
    """Check shapes for a problem whose reference needs sizes of at least 48 somewhere (a wide dilated
    kernel), from *envs* fitted with every size that wide: each size brought down the ordinary ladder
    as far as the reference still runs on the meta device (the spatial sizes stay wide, the channels
    do not), fitted to the work budget, and a second, wider shape beside it (:func:`budget.widen`; the
    same shape where nothing wider fits)."""
    env = dict(envs[0])
    for s in sorted(env, key=lambda s: -env[s]):
        for v in [v for v in shrink.ladder(symbols[s], divisors, 2) if v < env[s]]:
            if cost({**env, s: v}) is not None:
                env[s] = v
                break
    env = budget.fit(env, symbols, divisors, 2, budget.BUDGET[0], cost)
    return [env, budget.widen(env, symbols, divisors, 2, budget.BUDGET[1], cost)]


def _patched_inputs(source: str, filename: str, symbols: dict[str, int], env: dict[str, int], seed: int,
                    shapes: list[list[int]], global_syms: dict[str, str] | None = None):
    """(values, value ranges) of get_inputs() run for real with module-level size globals set to the
    check sizes, or None when it does not follow them.  It runs on the meta device first: only when
    every tensor then has its check shape (*shapes*, small) does it run on CPU, so a problem whose
    get_inputs() ignores the globals never allocates its full-size inputs here."""
    ns = _load(source, filename)
    by_value = {v: env[s] for s, v in symbols.items()}
    for k, v in list(ns.items()):
        if global_syms is not None:                   # the problem's free size globals, by name
            if type(v) is int and k in global_syms:
                ns[k] = env[global_syms[k]]
        elif type(v) is int and v in by_value and not k.startswith("__"):
            ns[k] = by_value[v]
    try:
        meta, _, _ = _run_inputs(ns, seed, "meta")
        tensors = [v for v in meta if isinstance(v, torch.Tensor)]
        if len(tensors) != len(shapes) or any(list(t.shape) != want for t, want in zip(tensors, shapes)):
            return None
        values, ranges, _ = _run_inputs(ns, seed, "cpu")
    except Exception:  # noqa: BLE001
        return None
    keep = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor)]
    return [values[i] for i in keep], [ranges[i] for i in keep]


def _validate(ns: dict[str, Any], source: str, filename: str, desc: dict[str, Any], seed: int) -> None:
    """Check the reference against Model at each check shape; fill in integer value ranges."""
    rns: dict[str, Any] = {"__name__": "kf_reference_check"}
    exec(compile(desc["reference"], "<reference>", "exec"), rns)
    reference, inputs = rns["reference"], desc["inputs"]
    tensor_inputs = [s for s in inputs if s["role"] == "input"]
    for k, env in enumerate(desc["check"]):
        init = [shrink.resolve(v, env) for v in desc["init"]]
        init = [tuple(v) if isinstance(v, tuple) else v for v in init]
        torch.manual_seed(seed)
        try:
            model = ns["Model"](*init)
        except Exception as exc:  # noqa: BLE001
            raise Refused(f"Model cannot be built at check shape {env} with constructor arguments {init} "
                          f"({_short(exc)}); its sizes do not follow the input shapes") from None
        state = dict(model.named_parameters()) | dict(model.named_buffers())
        shapes = [[env[d] if isinstance(d, str) else d for d in s["shape"]] for s in tensor_inputs]
        given = _patched_inputs(source, filename, desc["symbols"], env, seed, shapes, desc.get("global_syms"))
        values = []
        for i, (s, shape) in enumerate(zip(tensor_inputs, shapes)):
            g, g_range = (given[0][i], given[1][i]) if given is not None else (None, None)
            if k == 0 and s["dtype"] not in FLOATS and s["dtype"] != "bool":
                _value_range(s, desc["symbols"], env, g, g_range)
            if g is not None:
                values.append(g)
            elif s["dtype"] in FLOATS:
                values.append(torch.randn(shape).to(getattr(torch, s["dtype"])))
            elif s["dtype"] == "bool":
                values.append(torch.rand(shape) < 0.5)
            else:
                high = env[s["high"]] if isinstance(s["high"], str) else s["high"]
                values.append(torch.randint(s["low"], high, shape).to(getattr(torch, s["dtype"])))
        args = [values[[t["name"] for t in tensor_inputs].index(a["input"])] if "input" in a
                else shrink.resolve(a["const"], env) for a in desc["call_args"]]
        positions, fixed_values, message = set(), set(), None
        for s in inputs:
            if s["role"] != "input":
                got = state.get(s["module_attr"])
                got = got.reshape(1) if got is not None and s.get("scalar") else got
                want = [env[d] if isinstance(d, str) else d for d in s["shape"]]
                if got is None or list(got.shape) != want:
                    message = message or (f"at check shape {env}, Model's {s['module_attr']} has shape "
                                          f"{None if got is None else list(got.shape)}, expected {want}: its sizes "
                                          "do not follow the input shapes")
                    if got is None or got.dim() != len(want):
                        raise Refused(message)
                    fixed = {d for d, (g, w, t) in enumerate(zip(got.shape, want, s["target"])) if g != w and g == t}
                    derived = [d for d, (g, w) in enumerate(zip(got.shape, want)) if g != w and d not in fixed]
                    if any(isinstance(s["shape"][d], str) for d in derived):
                        raise Refused(message)
                    if derived:      # a literal dim that moved with the sizes (C // groups): fix those sizes
                        values = {s["target"][d] for d, dim in enumerate(s["shape"]) if isinstance(dim, str)}
                        positions |= {(t["name"], d) for t in inputs for d, v in enumerate(t["target"])
                                      if v in values}
                        fixed_values |= values
                    positions |= {(s["name"], d) for d in fixed}
                    fixed_values |= {s["target"][d] for d in fixed}
        if message:                                   # only dims that kept their target size: Model constants
            raise _FixedDims(message, positions, fixed_values)
        for s in inputs:                              # integer state (a counter): its own values' range
            if s["role"] != "input" and s["dtype"] not in FLOATS and s["dtype"] != "bool" and k == 0:
                t = state[s["module_attr"]]
                s["low"], s["high"] = int(t.min()), int(t.max()) + 1
        explicit = [values[tensor_inputs.index(s)] if s["role"] == "input" else
                    state[s["module_attr"]].reshape(1) if s.get("scalar") else state[s["module_attr"]]
                    for s in inputs]
        try:
            with torch.no_grad():
                torch.manual_seed(seed)
                want = model(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
                torch.manual_seed(seed)
                got = reference(*[t.clone() for t in explicit])
        except Exception as exc:  # noqa: BLE001
            raise Refused(f"Model.forward fails at check shape {env} ({_short(exc)})") from None
        want, got = _tensors(want, "Model.forward"), _tensors(got, "the reference")
        if k == 0:
            _refuse_random(model, reference, explicit, got, seed)
        if len(want) != len(got) or not all(a.shape == b.shape and torch.allclose(a, b, rtol=1e-5, atol=1e-6,
                                                                                   equal_nan=True)
                                            for a, b in zip(want, got)):
            raise Refused(f"the reference built from Model disagrees with Model at check shape {env}")
    try:
        targets = [torch.empty(s["target"], dtype=getattr(torch, s["dtype"]), device="meta") for s in inputs]
        desc["outputs"] = [{"shape": list(t.shape), "dtype": DTYPES[t.dtype]}
                           for t in _tensors(reference(*targets), "the reference")]
    except Refused:
        raise
    except Exception as exc:  # noqa: BLE001
        raise Refused(f"the reference cannot run on the meta device at the target shapes ({_short(exc)}); "
                      "data-dependent shapes cannot be imported") from None


def _refuse_random(model: torch.nn.Module, reference, explicit: list[torch.Tensor], got: list[torch.Tensor],
                   seed: int) -> None:
    """Refuse a reference whose outputs change with the random seed: nothing can check a kernel
    against it (dropout with p > 0 in training mode, which is how KernelBench runs the Model)."""
    try:
        with torch.no_grad():
            torch.manual_seed(seed + 1)
            again = _tensors(reference(*[t.clone() for t in explicit]), "the reference")
    except Exception:  # noqa: BLE001 - it ran once with these inputs: treat a failure as random
        again = []
    if len(again) == len(got) and all(torch.equal(a, b) or torch.allclose(a, b, equal_nan=True)
                                      for a, b in zip(again, got)):
        return
    drops = [f"{name or 'the Model'} = nn.{type(m).__name__}(p={m.p})" for name, m in model.named_modules()
             if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0]
    what = ("dropout in training mode (as KernelBench runs the Model): " + ", ".join(drops)) if drops else \
        "a random op in forward (torch.rand*, F.dropout with p > 0, bernoulli, ...)"
    raise _Random(f"the reference is random, its outputs change with the seed, so no kernel can be checked "
                  f"against it: {what}")


def _value_range(s: dict[str, Any], symbols: dict[str, int], env: dict[str, int], given: torch.Tensor | None,
                 given_range: tuple[int, int] | None) -> None:
    """``low``/``high`` of integer input *s*: the range get_inputs() draws it from, read off the call
    that builds it (``torch.randint(0, num_classes, ...)``) at the target sizes and, where get_inputs()
    follows the module's size globals, at the check sizes too (which tells a size-bound ``high`` such
    as ``num_classes`` from a constant); else the values it gave at the check sizes."""
    target = s.get("range")
    by_value = {v: sym for sym, v in symbols.items()}
    if target is not None:
        s["low"], s["high"] = target
        if target[1] in by_value:                    # randint(0, C) with C a size: the bound follows it
            sym = by_value[target[1]]
            if given_range is None or given_range[1] == env[sym]:
                s["high"] = sym
        return
    if given is not None and given_range is not None:
        s["low"], s["high"] = given_range
        return
    if given is not None:                            # values only: their observed range
        lo, hi = int(given.min()), int(given.max()) + 1
        s["low"], s["high"] = lo, hi
        for sym, v in env.items():                   # a range bounded by a size: randint(0, C)
            if hi <= v <= 2 * hi and symbols[sym] > v:
                s["high"] = sym
                break
        return
    raise Refused(f"integer input '{s['name']}': its value range cannot be read: get_inputs() builds it with "
                  f"`{s.get('made_by', '?')}` (a range is read from torch.randint/randint_like/randperm/arange/"
                  "full/tensor and casts of them) and does not follow the module-level size variables, so it "
                  "cannot be run at a small size either")


def _tensors(value: Any, what: str) -> list[torch.Tensor]:
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    if not items or not all(isinstance(t, torch.Tensor) for t in items):
        raise Refused(f"{what} returns {type(value).__name__}, not a tensor or a tuple of tensors")
    return items


def main(argv: list[str]) -> int:
    in_path, out_path = argv
    with open(in_path) as f:
        payload = json.load(f)
    try:
        result = describe(payload["source"], payload["filename"], int(payload.get("seed", 0)))
    except Refused as exc:
        result = {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - report, never crash silently
        result = {"error": f"import failed: {_short(exc)}", "traceback": traceback.format_exc()[-2000:]}
    with open(out_path, "w") as f:
        json.dump(result, f, default=lambda o: None if isinstance(o, float) and not math.isfinite(o) else str(o))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
