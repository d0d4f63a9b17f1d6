"""The candidate language, as tables: every module, member, builtin, attribute and option it may use.

An allowlist: whatever is not listed here is refused by :mod:`hack` and
:mod:`anticheat_host`, so a new capability needs a reviewed change to these tables.
``docs/candidate_format.md`` documents the same language for kernel authors and
the LLM; ``tests/evaluate/test_hack.py`` checks that every listed Triton name
exists in the installed Triton (so an upgrade that renames one is noticed).
"""

from __future__ import annotations

#: Identifiers that start with this are reserved for the verifier's instrumentation.
RESERVED_PREFIX = "_kf"
#: Names the verifier and Triton's interpreter place in a kernel's globals: a candidate may not bind them.
RESERVED_NAMES = frozenset({"interpreter_semantic", "_InterpreterComparison", "interpreter_builder"})
#: Launch hints: the checks and the trace run their first values and the model sweeps the rest, so
#: ``launch`` may only pass them on as launch options, never compute with them.
HINT_NAMES = frozenset({"num_warps", "num_stages"})

# ---- imports ------------------------------------------------------------------------------
#: Modules a candidate may import, and the members each may use (None: see MODULE_MEMBERS).
ALLOWED_MODULES = frozenset({"torch", "triton", "triton.language", "triton.language.math",
                             "triton.language.extra", "triton.language.extra.libdevice", "math", "typing",
                             "triton.tools", "triton.tools.tensor_descriptor"})
#: Packages that may only appear as the path to an allowed submodule (``triton.language.extra.libdevice``).
PATH_ONLY_MODULES = frozenset({"triton.language.extra", "triton.tools"})

TORCH_DTYPES = frozenset({"float16", "float32", "float64", "bfloat16", "half", "float", "double",
                          "int8", "int16", "int32", "int64", "uint8", "bool", "long", "int", "short",
                          "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"})
#: torch allocators: ``zeros*`` because split-K and atomic kernels need a zeroed accumulator (the
#: references of random inputs are never zero, and ``empty*`` outputs are NaN-poisoned).
TORCH_ALLOCATORS = frozenset({"empty", "empty_like", "empty_strided", "zeros", "zeros_like"})
TORCH_MEMBERS = TORCH_DTYPES | TORCH_ALLOCATORS | frozenset({"Tensor", "Size", "dtype", "device", "finfo", "iinfo"})
TRITON_MEMBERS = frozenset({"jit", "cdiv", "next_power_of_2", "heuristics", "language", "tools"})

#: triton.language members a kernel may use: ops, dtypes, constexpr and annotations.  Not listed:
#: compiler internals (core, semantic, standard, target_info, to_tensor, str_to_ty, aggregate
#: types), inline assembly (cannot be verified in the interpreter), ``random`` as a module and
#: ``atomic_poll`` (programs may not wait on each other, see docs/candidate_format.md).
TL_MEMBERS = frozenset({
    "abs", "add", "arange", "argmax", "argmin", "associative_scan", "assume", "atomic_add", "atomic_and",
    "atomic_cas", "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "bitonic_merge",
    "broadcast", "broadcast_to", "cast", "cat", "cdiv", "ceil", "clamp", "constexpr", "cos", "cumprod",
    "cumsum", "debug_barrier", "device_assert", "device_print", "div_rn", "dot", "dot_scaled", "dtype",
    "erf", "exp", "exp2", "expand_dims", "fdiv", "flip", "float16", "float32", "float64", "bfloat16",
    "float8e4b15", "float8e4b8", "float8e4nv", "float8e5", "float8e5b16", "floor", "fma", "full", "gather",
    "histogram", "int1", "int16", "int32", "int64", "int8", "interleave", "join", "load",
    "load_tensor_descriptor", "log", "log2", "make_tensor_descriptor", "max",
    "max_constancy", "max_contiguous", "maximum", "min", "minimum", "mul", "multiple_of", "num_programs",
    "pair_uniform_to_normal", "permute", "philox", "pointer_type", "program_id", "rand", "rand4x",
    "randint", "randint4x", "randn", "randn4x", "range", "ravel", "reduce", "reduce_or", "reshape",
    "rsqrt", "sigmoid", "sin", "slice", "softmax", "sort", "split", "sqrt", "sqrt_rn", "squeeze",
    "static_assert", "static_print", "static_range", "store", "store_tensor_descriptor", "sub", "sum",
    "swizzle2d", "tensor", "tensor_descriptor", "topk", "trans", "uint16", "uint32", "uint64", "uint8",
    "uint_to_uniform_float", "umulhi", "unsqueeze", "view", "where", "xor_sum", "zeros", "zeros_like",
    "PropagateNan", "TRITON_MAX_TENSOR_NUMEL",
})
TL_MATH_MEMBERS = frozenset({"abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma",
                             "log", "log2", "rsqrt", "sin", "sqrt", "sqrt_rn", "umulhi"})
TL_EXTRA_MEMBERS = frozenset({"libdevice"})
_ROUNDINGS = ("_rn", "_rz", "_rd", "_ru")
#: The libdevice functions the verifier's interpreter computes (evaluate/child/libdevice.py): the float
#: math library.  Bit casts, integer conversions and bit tricks (clz, popc, byte_perm...) are refused.
LIBDEVICE_INTERPRETED = frozenset({
    "abs", "floor", "ceil", "trunc", "rint", "nearbyint", "round", "saturatef", "copysign", "fdim", "nextafter",
    "isnan", "isinf", "finitef", "isfinited", "signbit", "hadd", "fmod", "remainder",
    "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "cbrt", "rcbrt",
    "sin", "cos", "tan", "sinpi", "cospi", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "hypot", "rhypot", "norm3d", "norm4d", "rnorm3d", "rnorm4d",
    "erf", "erfc", "erfinv", "erfcinv", "erfcx", "normcdf", "normcdfinv", "lgamma", "tgamma",
    "j0", "j1", "y0", "y1", "cyl_bessel_i0", "cyl_bessel_i1",
    "pow", "fast_powf", "fast_expf", "fast_exp10f", "fast_logf", "fast_log2f", "fast_log10f", "fast_sinf",
    "fast_cosf", "fast_tanf", "fast_dividef", "fma", "rsqrt_rn",
    *(f"{op}{r}" for op in ("fma", "add", "sub", "mul", "div", "rcp", "sqrt") for r in _ROUNDINGS),
})
TYPING_MEMBERS = frozenset({"Any", "Optional", "Union", "Tuple", "List", "Dict", "Sequence", "Callable",
                            "Iterable", "Literal", "Final"})
TENSOR_DESCRIPTOR_MEMBERS = frozenset({"TensorDescriptor"})
#: Members of the other modules; ``None``: every public member (``math`` is pure arithmetic),
MODULE_MEMBERS: dict[str, frozenset[str] | None] = {
    "torch": TORCH_MEMBERS, "triton": TRITON_MEMBERS, "triton.language": TL_MEMBERS,
    "triton.language.math": TL_MATH_MEMBERS, "triton.language.extra": TL_EXTRA_MEMBERS,
    "triton.language.extra.libdevice": LIBDEVICE_INTERPRETED, "math": None, "typing": TYPING_MEMBERS,
    "triton.tools": frozenset({"tensor_descriptor"}),
    "triton.tools.tensor_descriptor": TENSOR_DESCRIPTOR_MEMBERS,
}
#: Members of triton.language that Triton itself has removed: why, and what to use instead.
REMOVED_TL_MEMBERS = {
    "make_block_ptr": "block pointers were removed from Triton (3.9) in favour of tensor descriptors: use "
                      "tl.make_tensor_descriptor(base, shape, strides, block_shape) and desc.load([m, n])",
    "advance": "block pointers (and their .advance) were removed from Triton (3.9) in favour of tensor descriptors: "
               "pass the new offsets to desc.load([m, n]) instead",
}
#: Why a common module is refused (the reason goes to the LLM).
REFUSED_MODULE_WHY = {
    "os": "process, file and environment access", "sys": "interpreter internals",
    "subprocess": "running programs", "socket": "network access", "ctypes": "raw memory access",
    "importlib": "dynamic imports", "pickle": "arbitrary code on load", "marshal": "code objects",
    "threading": "threads", "multiprocessing": "processes", "signal": "signal handlers",
    "shutil": "file access", "pathlib": "file access", "io": "file access", "builtins": "builtins",
    "inspect": "frame and source introspection", "gc": "heap walking (could find the reference output)",
    "time": "timing games", "random": "nondeterminism", "numpy": "host computation",
    "functools": "caches and hidden call chains", "itertools": "not needed by kernels",
    "torch.nn": "torch computation", "torch.nn.functional": "torch computation",
    "torch.utils": "C++ extensions and data loading", "triton.testing": "benchmark helpers",
    "triton.runtime": "runtime internals", "triton.compiler": "compiler internals",
    "kernelfoundry": "the verifier itself",
}

# ---- builtins -------------------------------------------------------------------------------
#: Builtins host code (``launch`` and its helpers) may name.
HOST_BUILTINS = frozenset({
    "range", "len", "min", "max", "abs", "int", "float", "bool", "round", "tuple", "list", "dict",
    "isinstance", "print", "enumerate", "zip", "sum", "any", "all", "divmod", "pow", "sorted", "reversed",
    "str", "slice", "ValueError", "TypeError", "RuntimeError", "AssertionError", "NotImplementedError",
})
#: Builtins a ``@triton.jit`` function may name (on constexprs and loop bounds).
KERNEL_BUILTINS = frozenset({"range", "min", "max", "float", "int", "bool", "len", "abs", "print", "tuple",
                             "enumerate", "zip"})
#: Builtins a heuristics lambda may call.
DECORATOR_BUILTINS = frozenset({"min", "max", "int", "bool", "float", "len", "abs", "round"})

# ---- attributes on values -------------------------------------------------------------------
#: Tensor metadata readable in host code (never the values).
TENSOR_METADATA_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout"})
TENSOR_METADATA_METHODS = frozenset({"size", "stride", "numel", "dim", "element_size", "data_ptr",
                                     "is_contiguous", "nelement", "storage_offset", "get_device",
                                     "is_floating_point"})
#: Views and fresh allocations: they return tensors and copy nothing.  ``reshape``/``flatten``
#: copy when the tensor cannot be viewed; the dispatch guard then refuses the copy at run time.
#: ``contiguous``, ``clone`` and every conversion copy, so they are not listed.
TENSOR_VIEW_METHODS = frozenset({"view", "view_as", "reshape", "unsqueeze", "squeeze", "flatten", "t",
                                 "transpose", "permute", "expand", "expand_as", "narrow", "select",
                                 "unflatten", "movedim", "swapaxes", "swapdims", "chunk", "split", "unbind",
                                 "as_strided", "new_empty", "new_empty_strided", "new_zeros"})
TENSOR_VIEW_ATTRS = frozenset({"T", "mT"})
#: Other attributes host code may read on values: dtypes and devices (``x.dtype.itemsize``,
#: ``x.device.type``), ``torch.finfo`` results, read-only dict/tuple methods, TMA descriptors.
HOST_VALUE_ATTRS = frozenset({"itemsize", "is_signed", "type", "index", "max", "min", "eps", "tiny", "bits",
                              "resolution", "get", "items", "keys", "values", "count", "from_tensor"})
#: Attributes a kernel may use on its values: methods and properties of Triton tensors, pointer
#: and scalar dtypes, constexprs and tensor descriptors.  Not listed: ``handle``
#: (the interpreter's raw data), ``type``, ``to_ir`` and other compiler hooks.
KERNEL_VALUE_ATTRS = frozenset({
    "T", "abs", "argmax", "argmin", "associative_scan", "atomic_add", "atomic_and", "atomic_cas",
    "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "broadcast_to", "cast", "cdiv",
    "ceil", "cos", "cumprod", "cumsum", "erf", "exp", "exp2", "expand_dims", "flip", "floor", "gather",
    "histogram", "log", "log2", "logical_and", "logical_or", "max", "min", "permute", "ravel", "reduce",
    "reduce_or", "reshape", "rsqrt", "sigmoid", "sin", "softmax", "sort", "split", "sqrt", "sqrt_rn", "sum",
    "to", "trans", "view", "xor_sum", "load", "store",
    "dtype", "shape", "element_ty", "scalar", "value", "numel", "primitive_bitwidth", "block_shape",
    "is_floating", "is_fp16", "is_bf16", "is_fp32", "is_fp64", "is_fp8", "is_int", "is_int_signed",
    "is_int_unsigned", "is_ptr", "is_bool", "is_block",
})

# ---- decorators and launches --------------------------------------------------------------
JIT_DECORATORS = frozenset({"triton.jit", "jit"})
HEURISTICS_DECORATORS = frozenset({"triton.heuristics", "heuristics"})
#: Keyword options of ``@triton.jit(...)`` (``launch_metadata`` and ``repr`` take callbacks: refused).
JIT_OPTIONS = frozenset({"do_not_specialize", "do_not_specialize_on_alignment", "noinline", "debug"})
#: Launch options a ``kernel[grid](...)`` call may pass besides the kernel's own parameters.
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg"})

# ---- host code: where a tensor may go ---------------------------------------------------------
#: Builtins that may take a tensor argument without computing with its values.
TENSOR_SAFE_BUILTINS = frozenset({"len", "isinstance", "tuple", "list", "print"})
#: Host-side constructors that wrap a tensor for a kernel (TMA descriptors) without computing.
TENSOR_WRAPPERS = frozenset({"triton.tools.tensor_descriptor.TensorDescriptor.from_tensor",
                             "triton.tools.tensor_descriptor.TensorDescriptor"})
