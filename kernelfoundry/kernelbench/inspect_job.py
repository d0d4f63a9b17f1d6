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
from typing import Any

import torch

from . import shrink
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


def describe(source: str, filename: str, seed: int) -> dict[str, Any]:
    ns = _load(source, filename)
    try:
        with torch.device("meta"):
            torch.manual_seed(seed)
            forward_values = list(ns["get_inputs"]())
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
    for name, value in zip(_forward_names(ns["Model"], len(forward_values)), forward_values):
        if isinstance(value, torch.Tensor):
            inputs.append({"name": _identifier(name, taken), "shape": list(value.shape), "dtype": value.dtype,
                           "role": "input"})
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
    symbols, symbolic = shrink.assign_symbols({s["name"]: s["shape"] for s in inputs})
    sym_init = [shrink.symbolize(v, symbols) for v in init]
    divisors = [c for v in sym_init for c in shrink.constants_in(v)]
    for s in inputs:
        s["target"], s["shape"] = s["shape"], symbolic[s["name"]]
    reference = reference_source(source, inputs=inputs, symbols=symbols, init=sym_init, call_args=call_args)
    out = {"inputs": inputs, "symbols": symbols, "init": sym_init, "call_args": call_args, "reference": reference}
    try:
        out["check"] = shrink.check_shapes(symbols, symbolic, divisors)
        _validate(ns, source, filename, out, seed)
    except Refused:
        # a size constraint the constructor does not show (a group count fixed in forward): retry with
        # check sizes that keep every power-of-two factor up to 256 of the target sizes
        divisors += [2 ** k for k in range(1, 9)]
        out["check"] = shrink.check_shapes(symbols, symbolic, divisors)
        _validate(ns, source, filename, out, seed)
    from .graph import capture
    from .sizes import probe_env
    probe = probe_env(symbols, out["check"][0], {s: shrink.ladder(v, divisors) for s, v in symbols.items()})
    out["trace_envs"] = [out["check"][0], probe]
    out["graphs"], out["graph_error"] = capture(reference, inputs, out["trace_envs"])
    return out


def _patched_inputs(source: str, filename: str, symbols: dict[str, int], env: dict[str, int], seed: int):
    """get_inputs() run for real with module-level size globals set to the check sizes, or None."""
    ns = _load(source, filename)
    by_value = {v: env[s] for s, v in symbols.items()}
    changed = False
    for k, v in list(ns.items()):
        if type(v) is int and v in by_value and not k.startswith("__"):
            ns[k], changed = by_value[v], True
    if not changed:
        return None
    torch.manual_seed(seed)
    try:
        return list(ns["get_inputs"]())
    except Exception:  # noqa: BLE001
        return None


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
        given = _patched_inputs(source, filename, desc["symbols"], env, seed)
        values = []
        for i, s in enumerate(tensor_inputs):
            shape = [env[d] if isinstance(d, str) else d for d in s["shape"]]
            g = given[i] if given is not None and i < len(given) else None
            if isinstance(g, torch.Tensor) and list(g.shape) == shape:
                values.append(g)
            elif s["dtype"] in ("float32", "float16", "bfloat16", "float64"):
                values.append(torch.randn(shape).to(getattr(torch, s["dtype"])))
            else:
                raise Refused(f"integer input '{s['name']}': its value range cannot be read at a small size "
                              "(get_inputs() does not follow module-level size variables)")
            if s["dtype"] not in ("float32", "float16", "bfloat16", "float64") and k == 0:
                lo, hi = int(values[-1].min()), int(values[-1].max()) + 1
                if s["dtype"] != "bool":
                    s["low"], s["high"] = lo, hi
                    for sym, v in env.items():       # a range bounded by a size: randint(0, C)
                        if hi <= v <= 2 * hi and desc["symbols"][sym] > v:
                            s["high"] = sym
                            break
        args = [values[[t["name"] for t in tensor_inputs].index(a["input"])] if "input" in a
                else shrink.resolve(a["const"], env) for a in desc["call_args"]]
        for s in inputs:
            if s["role"] != "input":
                got = state.get(s["module_attr"])
                got = got.reshape(1) if got is not None and s.get("scalar") else got
                want = [env[d] if isinstance(d, str) else d for d in s["shape"]]
                if got is None or list(got.shape) != want:
                    raise Refused(f"at check shape {env}, Model's {s['module_attr']} has shape "
                                  f"{None if got is None else list(got.shape)}, expected {want}: its sizes do not "
                                  "follow the input shapes")
        for s in inputs:                              # integer state (a counter): its own values' range
            if s["role"] != "input" and s["dtype"] not in ("float32", "float16", "bfloat16", "float64", "bool") \
                    and k == 0:
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
