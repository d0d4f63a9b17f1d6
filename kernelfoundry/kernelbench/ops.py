"""Pointwise aten ops as Triton expressions, for the seed generator (:mod:`.seedgen`).

Each entry maps the op's arguments (already Triton expressions: loaded values, fused
sub-expressions or constants) and keyword arguments to one Triton expression.
"""

from __future__ import annotations

FLOAT = ("float32", "float16", "bfloat16", "float64")


def _unary(f):
    return lambda a, kw: f(a[0])


def _bin(op):
    return lambda a, kw: f"({a[0]} {op} {a[1]})"


def _pow(a, kw):
    try:
        k = float(a[1])
    except ValueError:
        k = None
    if k is not None and k.is_integer() and 1 <= k <= 4:
        return "(" + " * ".join([a[0]] * int(k)) + ")"
    if k == 0.5:
        return f"tl.sqrt({a[0]})"
    if k == -1:
        return f"(1.0 / {a[0]})"
    return f"tl.exp({a[1]} * tl.log({a[0]}))"       # positive bases (the interpreter has no libdevice.pow)


def _clamp(a, kw):
    x = a[0]
    lo = a[1] if len(a) > 1 and a[1] != "None" else kw.get("min")
    hi = a[2] if len(a) > 2 and a[2] != "None" else kw.get("max")
    if lo not in (None, "None"):
        x = f"tl.maximum({x}, {lo})"
    if hi not in (None, "None"):
        x = f"tl.minimum({x}, {hi})"
    return x


def _add(sign):
    def f(a, kw):
        alpha = kw.get("alpha")
        other = a[1] if alpha in (None, "1") else f"({alpha} * {a[1]})"
        return f"({a[0]} {sign} {other})"
    return f


#: pointwise op -> (args as Triton expressions, kwargs) -> Triton expression
POINTWISE = {
    "add": _add("+"), "sub": _add("-"), "mul": _bin("*"), "div": _bin("/"), "true_divide": _bin("/"),
    "neg": _unary(lambda x: f"(-{x})"), "abs": _unary(lambda x: f"tl.abs({x})"),
    "exp": _unary(lambda x: f"tl.exp({x})"), "exp2": _unary(lambda x: f"tl.exp2({x})"),
    "log": _unary(lambda x: f"tl.log({x})"), "log2": _unary(lambda x: f"tl.log2({x})"),
    "log1p": _unary(lambda x: f"tl.log(1.0 + {x})"), "expm1": _unary(lambda x: f"(tl.exp({x}) - 1.0)"),
    "sqrt": _unary(lambda x: f"tl.sqrt({x})"), "rsqrt": _unary(lambda x: f"tl.rsqrt({x})"),
    "sin": _unary(lambda x: f"tl.sin({x})"), "cos": _unary(lambda x: f"tl.cos({x})"),
    "sigmoid": _unary(lambda x: f"tl.sigmoid({x})"), "erf": _unary(lambda x: f"tl.erf({x})"),
    "tanh": _unary(lambda x: f"(2.0 * tl.sigmoid(2.0 * {x}) - 1.0)"),
    "relu": _unary(lambda x: f"tl.maximum({x}, 0.0)"), "reciprocal": _unary(lambda x: f"(1.0 / {x})"),
    "floor": _unary(lambda x: f"tl.floor({x})"), "ceil": _unary(lambda x: f"tl.ceil({x})"),
    "sign": _unary(lambda x: f"tl.where({x} > 0, 1.0, tl.where({x} < 0, -1.0, 0.0))"),
    "logical_not": _unary(lambda x: f"({x} == 0)"), "pow": _pow,
    "isnan": _unary(lambda x: f"({x} != {x})"), "isinf": _unary(lambda x: f"(tl.abs({x}) == float('inf'))"),
    "maximum": lambda a, kw: f"tl.maximum({a[0]}, {a[1]})", "minimum": lambda a, kw: f"tl.minimum({a[0]}, {a[1]})",
    "where": lambda a, kw: f"tl.where({a[0]}, {a[1]}, {a[2]})", "clamp": _clamp,
    "gt": _bin(">"), "lt": _bin("<"), "ge": _bin(">="), "le": _bin("<="), "eq": _bin("=="), "ne": _bin("!="),
    "logical_and": lambda a, kw: f"(({a[0]} != 0) & ({a[1]} != 0))",
    "logical_or": lambda a, kw: f"(({a[0]} != 0) | ({a[1]} != 0))",
    "clone": _unary(lambda x: x), "alias_copy": _unary(lambda x: x),
}
CASTS = {"_to_copy", "convert_element_type", "to"}
CONSTANTS = {"full", "scalar_tensor", "full_like", "zeros_like", "ones_like"}
TL_DTYPE = {"float32": "tl.float32", "float16": "tl.float16", "bfloat16": "tl.bfloat16", "float64": "tl.float64",
            "int64": "tl.int64", "int32": "tl.int32", "int16": "tl.int16", "int8": "tl.int8", "uint8": "tl.uint8",
            "bool": "tl.int1"}
