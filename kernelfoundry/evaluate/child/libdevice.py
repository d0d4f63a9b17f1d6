"""libdevice in Triton's interpreter: the math functions a candidate may call, computed in numpy.

``triton.language.extra.libdevice`` is a module of stubs: the compiler swaps in the backend's
library (CUDA's ``__nv_*`` functions), the interpreter swaps in nothing, so every call returned None
and no kernel calling ``libdevice.erf`` (an exact GELU) could pass a check.  :func:`install` makes
each stub named in :data:`~kernelfoundry.evaluate.contract.language.LIBDEVICE_INTERPRETED` call the
CUDA wrapper of the same name, so argument types are dispatched and refused exactly as on a GPU (an
fp16 argument fails as it fails to compile), and gives the interpreter's builder the
``create_extern_elementwise`` it lacks: the function computed in float64 and rounded to the result
type.  Each call counts as one op per element, transcendental or elementwise as on the GPU (a
software routine or a single instruction), in the active trace session; the builder's precision
tags pass through it like any other op's.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, Callable

import numpy as np
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

from ...harness.guard import DispatchGuard

from ..contract.language import LIBDEVICE_INTERPRETED
from . import active_session


def _t(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., np.ndarray]:
    """A torch special function on float64 arrays (the verifier's own torch: the dispatch guard pauses)."""
    def call(*arrays):
        with ExitStack() as stack:
            for mode in _get_current_dispatch_mode_stack():
                if isinstance(mode, DispatchGuard):
                    stack.enter_context(mode.paused())
            return fn(*(torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64)) for a in arrays)).numpy()
    return call


def _rcp(x):
    with np.errstate(divide="ignore"):
        return 1.0 / x


def _div(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return x / y


def _pow(x, y):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(x, y)


def _norm(*xs):
    return np.sqrt(sum(x * x for x in xs))


def _tgamma(x):
    x = np.asarray(x, dtype=np.float64)
    sign = np.where((x < 0) & (np.floor(-x) % 2 == 0), -1.0, 1.0)       # Gamma's sign between negative poles
    return sign * np.exp(_t(torch.lgamma)(x))


def _erfcinv(x):
    return _t(torch.special.erfinv)(1.0 - np.asarray(x, dtype=np.float64))


_E = "elementwise"
_T = "transcendental"
_ROUNDED = ("", "_rn", "_rz", "_rd", "_ru")       # rounding modes: computed in float64, rounded once
#: name -> (op kind, function of float64 arrays).  Kinds follow the GPU: one instruction or a routine.
IMPLEMENTATIONS: dict[str, tuple[str, Callable[..., np.ndarray]]] = {
    "abs": (_E, np.abs), "floor": (_E, np.floor), "ceil": (_E, np.ceil), "trunc": (_E, np.trunc),
    "rint": (_E, np.rint), "nearbyint": (_E, np.rint), "round": (_E, lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)),
    "saturatef": (_E, lambda x: np.clip(x, 0.0, 1.0)), "copysign": (_E, np.copysign),
    "fdim": (_E, lambda x, y: np.where(x > y, x - y, 0.0)), "nextafter": (_E, np.nextafter),
    "isnan": (_E, np.isnan), "isinf": (_E, np.isinf), "finitef": (_E, np.isfinite), "isfinited": (_E, np.isfinite),
    "signbit": (_E, np.signbit), "hadd": (_E, lambda x, y: np.floor((x + y) / 2)),
    "fmod": (_T, lambda x, y: np.fmod(x, y)), "remainder": (_T, lambda x, y: x - y * np.rint(_div(x, y))),
    "exp": (_T, np.exp), "exp2": (_T, np.exp2), "exp10": (_T, lambda x: np.power(10.0, x)), "expm1": (_T, np.expm1),
    "log": (_T, np.log), "log2": (_T, np.log2), "log10": (_T, np.log10), "log1p": (_T, np.log1p),
    "sqrt": (_T, np.sqrt), "rsqrt": (_T, lambda x: _rcp(np.sqrt(x))), "cbrt": (_T, np.cbrt),
    "rcbrt": (_T, lambda x: _rcp(np.cbrt(x))), "sin": (_T, np.sin), "cos": (_T, np.cos), "tan": (_T, np.tan),
    "sinpi": (_T, lambda x: np.sin(np.pi * x)), "cospi": (_T, lambda x: np.cos(np.pi * x)),
    "asin": (_T, np.arcsin), "acos": (_T, np.arccos), "atan": (_T, np.arctan), "atan2": (_T, np.arctan2),
    "sinh": (_T, np.sinh), "cosh": (_T, np.cosh), "tanh": (_T, np.tanh), "asinh": (_T, np.arcsinh),
    "acosh": (_T, np.arccosh), "atanh": (_T, np.arctanh), "hypot": (_T, np.hypot),
    "rhypot": (_T, lambda x, y: _rcp(np.hypot(x, y))), "norm3d": (_T, _norm), "norm4d": (_T, _norm),
    "rnorm3d": (_T, lambda *x: _rcp(_norm(*x))), "rnorm4d": (_T, lambda *x: _rcp(_norm(*x))),
    "erf": (_T, _t(torch.special.erf)), "erfc": (_T, _t(torch.special.erfc)), "erfinv": (_T, _t(torch.special.erfinv)),
    "erfcinv": (_T, _erfcinv), "erfcx": (_T, _t(torch.special.erfcx)), "normcdf": (_T, _t(torch.special.ndtr)),
    "normcdfinv": (_T, _t(torch.special.ndtri)), "lgamma": (_T, _t(torch.lgamma)),
    "tgamma": (_T, _tgamma),
    "j0": (_T, _t(torch.special.bessel_j0)), "j1": (_T, _t(torch.special.bessel_j1)),
    "y0": (_T, _t(torch.special.bessel_y0)), "y1": (_T, _t(torch.special.bessel_y1)),
    "cyl_bessel_i0": (_T, _t(torch.special.i0)), "cyl_bessel_i1": (_T, _t(torch.special.i1)),
    "pow": (_T, _pow), "fast_powf": (_T, _pow), "fast_expf": (_T, np.exp), "fast_exp10f": (_T, lambda x: np.power(10.0, x)),
    "fast_logf": (_T, np.log), "fast_log2f": (_T, np.log2), "fast_log10f": (_T, np.log10),
    "fast_sinf": (_T, np.sin), "fast_cosf": (_T, np.cos), "fast_tanf": (_T, np.tan), "fast_dividef": (_T, _div),
    "fma": (_E, lambda x, y, z: x * y + z),
    **{f"fma{r}": (_E, lambda x, y, z: x * y + z) for r in _ROUNDED[1:]},
    **{f"add{r}": (_E, np.add) for r in _ROUNDED[1:]},
    **{f"sub{r}": (_E, np.subtract) for r in _ROUNDED[1:]},
    **{f"mul{r}": (_E, np.multiply) for r in _ROUNDED[1:]},
    **{f"div{r}": (_T, _div) for r in _ROUNDED[1:]},
    **{f"rcp{r}": (_T, _rcp) for r in _ROUNDED[1:]},
    **{f"sqrt{r}": (_T, np.sqrt) for r in _ROUNDED[1:]},
    "rsqrt_rn": (_T, lambda x: _rcp(np.sqrt(x))),
}
assert set(IMPLEMENTATIONS) == LIBDEVICE_INTERPRETED, "contract.language.LIBDEVICE_INTERPRETED is out of date"

_calling: list[str] = []               # the libdevice function being dispatched (the builder sees a symbol only)


def _extern_elementwise(self, lib_name, lib_path, symbol, arg_list, ret_type, is_pure):
    """``InterpreterBuilder.create_extern_elementwise``: the function :data:`_calling` names, in numpy."""
    from triton.runtime import interpreter as interp
    name = _calling[-1] if _calling else symbol
    kind, fn = IMPLEMENTATIONS[name]
    arrays = [a.data if isinstance(a, interp.TensorHandle) else np.asarray(a) for a in arg_list]
    with np.errstate(all="ignore"):
        data = np.asarray(fn(*(np.asarray(a, dtype=np.float64) for a in arrays)))
    dtype = ret_type.scalar if hasattr(ret_type, "scalar") else ret_type
    data = np.broadcast_to(data, np.broadcast_shapes(*(np.shape(a) for a in arrays))).astype(interp._get_np_dtype(dtype))
    session = active_session.current
    if session is not None and session.count_ops:
        session.on_ops(kind, int(data.size), 1)
    return interp.TensorHandle(data, dtype)


def _weak_scalars(args: tuple) -> tuple:
    """Python numbers take the float tensor arguments' type, as the compiler's weak typing gives them
    (the interpreter makes every float literal fp32, so ``fma(x64, y64, 1.0)`` found no fp64 variant)."""
    import triton.language as tl
    from triton.runtime import interpreter as interp
    dtype = next((a.dtype.scalar for a in args if isinstance(a, tl.tensor) and a.dtype.scalar.is_floating()), None)
    if dtype is None:
        return args
    out = []
    for a in args:
        value = a.value if isinstance(a, tl.constexpr) else a
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            a = tl.tensor(interp.TensorHandle(np.array([value], dtype=interp._get_np_dtype(dtype)), dtype), dtype)
        out.append(a)
    return tuple(out)


def _dispatching(name: str, wrapper: Any) -> Callable[..., Any]:
    from triton.runtime import interpreter as interp

    def call(*args, **kwargs):
        kwargs.pop("_semantic", None)
        _calling.append(name)
        try:
            return wrapper(*_weak_scalars(args), _semantic=interp.interpreter_semantic, **kwargs)
        except KeyError as exc:              # Triton's dispatch table has no variant for these types
            raise TypeError(f"libdevice.{name} has no variant for argument types {exc.args[0]}: libdevice's float "
                            "functions take fp32 or fp64 (cast fp16/bf16 with .to(tl.float32)), as on a GPU") from None
        finally:
            _calling.pop()
    call.__name__ = call.__qualname__ = name
    call.__module__ = "triton.language.extra.libdevice"       # Triton's dependency hasher skips these stubs
    return call


def install() -> None:
    """Route the interpreter's libdevice stubs to numpy (idempotent; the interpreter must be on)."""
    from triton.language.extra import libdevice as stubs
    from triton.language.extra.cuda import libdevice as cuda
    from triton.runtime import interpreter as interp
    if getattr(stubs, "_kf_interpreted", False):
        return
    interp.InterpreterBuilder.create_extern_elementwise = _extern_elementwise
    for name in sorted(LIBDEVICE_INTERPRETED):
        wrapper = getattr(cuda, name, None)
        if wrapper is not None and hasattr(stubs, name):
            setattr(stubs, name, _dispatching(name, wrapper))
    stubs._kf_interpreted = True
