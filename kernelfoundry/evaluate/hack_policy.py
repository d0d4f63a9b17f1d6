"""What the static hack gate allows: modules, module members, builtins, tensor methods.

Tables only; the rules that use them are in :mod:`hack` and :mod:`hack_host`.
Everything not listed is refused, so a new escape needs a change here, in review.
"""

from __future__ import annotations

#: Modules a candidate may import (plus ``triton.language.*`` submodules and ``__future__``).
ALLOWED_MODULES = frozenset({"torch", "triton", "triton.language", "math", "typing", "functools",
                             "itertools", "numbers", "dataclasses", "triton.tools.tensor_descriptor"})

#: Members of ``torch`` a candidate may touch: dtypes, type names and allocation.
#: ``zeros``/``zeros_like`` are allowed because split-K and atomic kernels need a
#: zeroed accumulator; they cannot hide an unwritten output in practice because
#: correctness compares against references of random inputs, which are not zero.
TORCH_DTYPES = frozenset({"float16", "float32", "float64", "bfloat16", "half", "float", "double",
                          "int8", "int16", "int32", "int64", "uint8", "bool", "long", "int", "short",
                          "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"})
TORCH_ALLOCATORS = frozenset({"empty", "empty_like", "empty_strided", "zeros", "zeros_like"})
TORCH_ALLOWED = TORCH_DTYPES | TORCH_ALLOCATORS | frozenset(
    {"Tensor", "Size", "dtype", "device", "finfo", "iinfo", "is_tensor", "is_floating_point"})

#: Members of ``triton``; ``autotune`` is refused (the verifier tunes PARAMS itself).
TRITON_ALLOWED = frozenset({"jit", "cdiv", "next_power_of_2", "language", "heuristics", "Config"})

#: ``triton.language`` members that expose compiler internals rather than kernel ops.
TL_REFUSED = frozenset({"core", "semantic", "standard_ir", "builder"})

#: Allowed members of the other allowed modules (None: any public member).
MODULE_MEMBERS: dict[str, frozenset[str] | None] = {
    "math": None, "itertools": None,
    # typing.get_type_hints & co. evaluate annotation strings: only plain type names
    "typing": frozenset({"Any", "Optional", "Union", "Tuple", "List", "Dict", "Sequence", "Callable",
                         "Iterable", "Literal", "Final", "cast"}),
    "numbers": frozenset({"Number", "Integral", "Real"}),
    "dataclasses": frozenset({"dataclass", "field"}),
    "functools": frozenset({"partial", "wraps", "reduce"}),
    "triton.tools.tensor_descriptor": frozenset({"TensorDescriptor"}),
}

#: Host-side constructors that wrap a tensor for a kernel (TMA descriptors) without computing.
TENSOR_WRAPPERS = frozenset({"triton.tools.tensor_descriptor.TensorDescriptor.from_tensor",
                             "triton.tools.tensor_descriptor.TensorDescriptor"})

#: Why a module is refused, for the most common ones (the reason goes to the LLM).
REFUSED_MODULE_WHY = {
    "os": "process, file and environment access", "sys": "interpreter internals",
    "subprocess": "running programs", "socket": "network access", "ctypes": "raw memory access",
    "importlib": "dynamic imports", "pickle": "arbitrary code on load", "marshal": "code objects",
    "threading": "threads", "multiprocessing": "processes", "signal": "signal handlers",
    "shutil": "file access", "pathlib": "file access", "io": "file access", "builtins": "builtins",
    "inspect": "frame and source introspection", "gc": "heap walking (could find the reference output)",
    "time": "timing games", "random": "nondeterminism", "numpy": "host computation",
    "torch.nn": "torch computation", "torch.nn.functional": "torch computation",
    "torch.utils": "C++ extensions and data loading", "triton.testing": "benchmark helpers",
    "triton.runtime": "runtime internals", "triton.compiler": "compiler internals",
    "kernelfoundry": "the verifier itself",
}

#: Builtins refused anywhere: code execution, reflection, file access, interpreter exits.
REFUSED_BUILTINS = frozenset({
    "eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars", "getattr",
    "setattr", "delattr", "hasattr", "input", "breakpoint", "help", "exit", "quit", "memoryview",
    "type", "object", "super", "dir", "classmethod", "staticmethod", "property", "__build_class__",
    "copyright", "credits", "license",
})

#: Non-underscore attribute names that reach frames, code or interpreter internals.
REFUSED_ATTRIBUTES = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "ag_frame", "ag_code",
    "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next",
    "co_code", "co_consts", "func_globals", "func_code", "mro", "format_map",
    # Triton interpreter internals / host copies of device data
    "handle", "numpy", "tofile", "tobytes", "tolist", "item", "storage", "untyped_storage",
    "cpu", "cuda", "fn", "cache", "device_caches", "run",
    # modules and functions that other modules import: reaching them through an attribute
    # chain (tl.<submodule>.builtins.exec) would bypass the import rules
    "builtins", "pkgutil", "inspect", "importlib", "knobs", "os", "sys", "subprocess",
    "exec", "eval", "compile", "open", "system", "popen",
})

#: Identifiers that refer to the task's reference or the verifier.
REFUSED_IDENTIFIERS = frozenset({"reference", "kernelfoundry"})

#: Decorators a candidate may use: ``@triton.jit`` (with or without options), ``@triton.heuristics``.
JIT_DECORATORS = frozenset({"triton.jit", "jit"})
OTHER_DECORATORS = frozenset({"triton.heuristics", "heuristics"})

# ---- host code (launch and its helpers) -------------------------------------------------
#: Tensor methods that only read metadata (they return ints, dtypes, devices).
TENSOR_METADATA_METHODS = frozenset({"size", "stride", "numel", "dim", "element_size", "data_ptr",
                                     "is_contiguous", "nelement", "storage_offset", "get_device",
                                     "is_floating_point"})
TENSOR_METADATA_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout"})
#: Tensor methods that allocate or make views (return tensors, compute nothing).
TENSOR_VIEW_METHODS = frozenset({"view", "view_as", "reshape", "contiguous", "unsqueeze", "squeeze", "flatten",
                                 "new_empty", "new_empty_strided", "new_zeros", "as_strided",
                                 "t", "transpose", "permute", "expand", "expand_as", "narrow", "select",
                                 "unflatten", "movedim", "swapaxes", "swapdims", "chunk", "split", "unbind"})
#: Tensor attributes that are views (``b.T`` to pass B transposed by its strides).
TENSOR_VIEW_ATTRS = frozenset({"T", "mT"})
#: Builtins that may take a tensor argument without computing with its values.
TENSOR_SAFE_BUILTINS = frozenset({"len", "isinstance", "tuple", "list", "print", "id"})
