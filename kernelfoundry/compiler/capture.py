"""Capture launch signatures from kernel launches, with Triton's own specialisation rules.

:func:`signature_of_launch` turns one ``kernel[grid](*args, **kwargs)`` call into a
:class:`LaunchSignature`, using Triton's binder (``create_function_from_signature``
with the AMD backend's rules, which add the 2 GiB pointer-range flag to the
NVIDIA ones), so divisibility by 16, ints equal to 1, ``None`` arguments,
``do_not_specialize`` and annotations behave exactly as in a real launch.

:class:`LaunchRecorder` patches the kernel classes for the duration of a
``with`` block and records every launch; with ``dry_run=True`` (the default) the
kernels do not run.  :func:`capture_signatures` dry-runs a module's ``launch``.

This runs the module's host code: use it only on trusted kernels (tests, seeds)
or inside the sandboxed child.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from .signature import ArgSpec, LaunchSignature, SignatureError, parse_signature

#: Launch keywords that are Triton options; any other keyword must be a kernel parameter.
SUPPORTED_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion")


def _unwrap(kernel: Any) -> Any:
    """The innermost kernel object (through ``@triton.heuristics`` / autotuner wrappers)."""
    seen = 0
    while not hasattr(kernel, "arg_names") or type(kernel).__name__ in ("Heuristics", "Autotuner"):
        kernel = kernel.fn
        seen += 1
        if seen > 8:
            raise SignatureError("kernel wrappers nest too deeply")
    return kernel


def _jit_view(kernel: Any):
    """``(JITFunction, binder)`` for *kernel*: Triton's argument binder with the AMD rules (cached)."""
    from triton.backends.amd.compiler import HIPBackend
    from triton.runtime.jit import JITFunction, create_function_from_signature
    fn = kernel.fn
    cached = _BINDERS.get(fn)
    if cached is None:
        kwargs = getattr(kernel, "kwargs", None) or {}
        jit = kernel if isinstance(kernel, JITFunction) else JITFunction(
            fn, do_not_specialize=kwargs.get("do_not_specialize"),
            do_not_specialize_on_alignment=kwargs.get("do_not_specialize_on_alignment"))
        cached = (jit, create_function_from_signature(jit.signature, jit.params, HIPBackend))
        if len(_BINDERS) >= 256:                 # bounded: a long-lived process sees many candidates
            _BINDERS.clear()
        _BINDERS[fn] = cached
    return cached


_BINDERS: dict[Callable, tuple[Any, Callable]] = {}


def _dtype_name(type_text: str) -> str:
    return type_text[1:] if type_text.startswith("*") else type_text


def signature_of_launch(kernel: Any, args: tuple, kwargs: dict[str, Any]) -> LaunchSignature:
    """The signature of ``kernel[grid](*args, **kwargs)`` (kwargs after any heuristics ran).

    Raises :class:`SignatureError` for arguments the record cannot express
    (tensor descriptors, unknown launch options).
    """
    inner = _unwrap(kernel)
    name = inner.fn.__name__
    jit, binder = _jit_view(inner)
    params, specialization, options = binder(*args, **kwargs)
    unknown = sorted(set(options) - set(SUPPORTED_OPTIONS))
    if unknown:
        raise SignatureError(f"launch of {name}: option(s) {', '.join(unknown)} are not supported by the "
                             f"signature record (supported: {', '.join(SUPPORTED_OPTIONS)})")
    constexpr_params = {p.name for p in jit.params if p.is_constexpr}
    out = []
    for (pname, value), (type_text, spec) in zip(params.items(), specialization):
        spec = spec if isinstance(spec, str) else ""      # annotated params carry the raw value here
        if type_text == "constexpr":
            if pname not in constexpr_params and value == 1 and isinstance(value, int) and not isinstance(value, bool):
                out.append(ArgSpec(name=pname, kind="int", dtype="i32", equals_one=True))
            else:
                out.append(ArgSpec(name=pname, kind="constexpr", value=_encode_constexpr(value, name, pname)))
        elif type_text.startswith("*"):
            out.append(ArgSpec(name=pname, kind="pointer", dtype=_dtype_name(type_text), div16="D" in spec,
                               range32="S" in spec))
        elif type_text.startswith("tensordesc") or type_text == "nvTmaDesc":
            raise SignatureError(f"launch of {name}: argument {pname} is a tensor descriptor ({type_text}); "
                                 "the signature record does not support descriptors yet")
        elif type_text.startswith(("fp", "bf")):
            out.append(ArgSpec(name=pname, kind="float", dtype=type_text))
        else:
            out.append(ArgSpec(name=pname, kind="int", dtype=type_text, div16="D" in spec))
    record = LaunchSignature(kernel=name, args=tuple(out), num_warps=int(options.get("num_warps", 4)),
                             num_stages=options.get("num_stages"), num_ctas=int(options.get("num_ctas", 1)),
                             maxnreg=options.get("maxnreg"),
                             enable_fp_fusion=bool(options.get("enable_fp_fusion", True)))
    return parse_signature(record.to_dict(), where=f"captured launch of {name}")


def _encode_constexpr(value: Any, kernel: str, param: str) -> Any:
    import triton.language as tl
    if isinstance(value, tl.constexpr):
        value = value.value
    if isinstance(value, tl.dtype):
        return {"dtype": value.name}
    if isinstance(value, tuple):
        return [_encode_constexpr(v, kernel, param) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise SignatureError(f"launch of {kernel}: constexpr {param}={value!r} ({type(value).__name__}) cannot be "
                         "written in a signature record")


class LaunchRecorder:
    """Record the signature of every Triton kernel launch inside a ``with`` block.

    ``dry_run=True``: launches return None without running.  Records land in
    ``self.signatures`` in launch order, duplicates kept (see :meth:`unique`).
    Not thread-safe: it patches the kernel classes process-wide.
    """

    def __init__(self, *, dry_run: bool = True):
        self.dry_run = dry_run
        self.signatures: list[LaunchSignature] = []
        self._saved: list[tuple[type, Callable]] = []

    def __enter__(self) -> "LaunchRecorder":
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction
        recorder = self
        for cls in (InterpretedFunction, JITFunction):
            original = cls.run

            def run(kernel, *args, grid, warmup, _original=original, **kwargs):
                if not warmup:
                    recorder.signatures.append(signature_of_launch(kernel, args, kwargs))
                    if recorder.dry_run:
                        return None
                return _original(kernel, *args, grid=grid, warmup=warmup, **kwargs)

            self._saved.append((cls, original))
            cls.run = run
        return self

    def __exit__(self, *exc) -> None:
        for cls, original in self._saved:
            cls.run = original
        self._saved.clear()

    def unique(self) -> list[LaunchSignature]:
        """The recorded signatures without repeats, in first-launch order."""
        seen, out = set(), []
        for sig in self.signatures:
            key = sig.canonical()
            if key not in seen:
                seen.add(key)
                out.append(sig)
        return out


def capture_signatures(launch: Callable[..., Any], inputs: list[Any], params: dict[str, Any]) -> list[LaunchSignature]:
    """Dry-run ``launch(*inputs, **params)`` and return its distinct launch signatures."""
    with LaunchRecorder(dry_run=True) as recorder:
        launch(*inputs, **params)
    return recorder.unique()


def capture_task_signatures(source: str | Path, task: Any, configs: list[dict[str, Any]], *,
                            shape_index: int = 0, directory: str | Path | None = None
                            ) -> dict[str, list[LaunchSignature]]:
    """Signatures of a trusted kernel module for each config at one target shape of *task*.

    *source* is the module's text (a ``Path``: its file); *configs* are full parameter dicts
    (hints included).  Returns ``{config_key(config): [signatures]}``.  Imports
    the module in this process under Triton's interpreter: trusted kernels only.
    """
    from ..candidate import config_key
    from ..harness.inputs import empty_inputs
    from ..harness.loader import import_candidate
    text = source.read_text() if isinstance(source, Path) else str(source)
    os.environ["TRITON_INTERPRET"] = "1"
    with tempfile.TemporaryDirectory(prefix="kf-capture-", dir=directory) as tmp:
        module, _ = import_candidate(text, Path(tmp))
        try:
            inputs = empty_inputs(task, task.target_shapes[shape_index])
            return {config_key(c): capture_signatures(module.launch, inputs, c) for c in configs}
        finally:
            sys.modules.pop(module.__name__, None)
