"""Hooks into Triton's interpreter (3.9): which programs run, and what each one touches.

While a :class:`Session` is :func:`active`, every kernel launch goes through
:func:`_instrumented_call` instead of ``GridExecutor.__call__``: it checks the
launch (no pre-run hooks, constexpr arguments are plain values, every other
argument a tensor, number or descriptor), maps the tensor arguments
(:class:`TensorMap`) and hands a :class:`LaunchContext` to the session, which
decides which program ids run and in which order.  Builder methods of the
module-level ``interpreter_builder`` are wrapped so that every load, store,
atomic, dot and arithmetic op reaches the session first.  Every unmasked address
is checked against the storage extents of the launch's tensor arguments *before*
the access happens.  An fp32 ``tl.dot`` with ``input_precision="tf32"`` (Triton's
default) rounds its operands to TF32 as the tensor cores do, so correctness is
checked at the precision the kernel is scored at.  With ``track_precision`` every
value carries the widest float type it was loaded from, so a dot is scored at the
precision of its operands as loaded, not as cast.

Needs ``TRITON_INTERPRET=1`` before ``import triton``; device must be CPU.
"""

from __future__ import annotations

import bisect
import dataclasses
import inspect
import sys
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np
import torch
import triton.language as tl
from triton.runtime import interpreter as interp
from triton.tools.tensor_descriptor import TensorDescriptor
from . import active_session
from .ticket_desk import DESK

_TORCH_DTYPE_NAMES = {
    torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "i1",
}
#: Precision rank of float element types (0: not a float).
PRECISION_RANK = {"fp8e4nv": 1, "fp8e5": 1, "fp8e4b15": 1, "fp8e4b8": 1, "fp8e5b16": 1,
                  "fp16": 2, "bf16": 2, "fp32": 3, "fp64": 4}
RANK_DTYPE = {1: "fp8", 2: "fp16", 3: "fp32", 4: "fp64"}

FLOAT_OPS = (
    "create_fadd", "create_fsub", "create_fmul", "create_fdiv", "create_frem", "create_fneg",
    "create_precise_divf", "create_approx_divf", "create_minimumf", "create_maximumf",
    "create_minnumf", "create_maxnumf", "create_fabs", "create_floor", "create_ceil", "create_clampf",
    "create_fcmpOLT", "create_fcmpOGT", "create_fcmpOLE", "create_fcmpOGE", "create_fcmpOEQ",
    "create_fcmpONE", "create_fcmpULT", "create_fcmpUGT", "create_fcmpULE", "create_fcmpUGE",
    "create_fcmpUEQ", "create_fcmpUNE",
)
FMA_OPS = ("create_fma",)              # two flops per element
SELECT_OPS = ("create_select",)        # counted when the selected values are floating point
TRANSCENDENTAL_OPS = ("create_exp", "create_exp2", "create_log", "create_log2", "create_sqrt",
                      "create_precise_sqrt", "create_rsqrt", "create_sin", "create_cos", "create_erf")
_MEMORY_OPS = ("create_masked_load", "create_masked_store", "create_atomic_rmw", "create_atomic_cas",
               "create_dot", "create_dot_scaled", "create_descriptor_gather")
#: Launch options a candidate may pass (see language.LAUNCH_OPTIONS); recorded for the compiler.
LAUNCH_OPTION_NAMES = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def dtype_name(dtype: torch.dtype) -> str:
    """Triton-style short name of a torch dtype (``fp16``, ``i32``...)."""
    return _TORCH_DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


class OutOfBoundsAccess(Exception):
    """An unmasked load/store/atomic outside every tensor argument's storage."""

    def __init__(self, kind: str, tensor: str, offset: int, storage_elems: int, kernel: str,
                 program: tuple[int, int, int], count: int):
        self.kind, self.tensor, self.offset = kind, tensor, offset
        self.storage_elems, self.kernel, self.program, self.count = storage_elems, kernel, program, count
        side = "before its start" if offset < 0 else f"past its end (its storage holds {storage_elems} elements)"
        super().__init__(
            f"out-of-bounds {kind} on argument {tensor} at element offset {offset}, {side}; "
            f"{count} unmasked element(s) of that access fall outside every tensor argument "
            f"(kernel {kernel}, program {program}). Mask the access (mask=offsets < n) or fix the offsets.")


class RuleViolation(Exception):
    """A launch or a kernel broke a rule the interpreter would not enforce (the message says which)."""


@dataclass(frozen=True)
class TensorInfo:
    """One tensor argument of a launch: where its data and its whole storage live."""

    name: str
    data_ptr: int
    start: int          # storage start address
    end: int            # storage end address (exclusive)
    elem_bytes: int
    dtype: str
    numel: int

    @property
    def storage_bytes(self) -> int:
        return self.end - self.start


class TensorMap:
    """Address -> tensor argument lookup for one launch (storages sorted by address)."""

    def __init__(self, tensors: list[TensorInfo]):
        self.tensors = tensors
        regions: dict[int, list[TensorInfo]] = {}
        for t in tensors:
            if t.end > t.start:
                regions.setdefault(t.start, []).append(t)
        self._starts = sorted(regions)
        self._ends = [max(t.end for t in regions[s]) for s in self._starts]
        self._members = [sorted(regions[s], key=lambda t: t.data_ptr) for s in self._starts]
        self._starts_np = np.array(self._starts, dtype=np.int64)
        self._ends_np = np.array(self._ends, dtype=np.int64)

    @classmethod
    def from_args(cls, call_args: dict[str, Any]) -> "TensorMap":
        found: list[TensorInfo] = []

        def visit(name: str, value: Any) -> None:
            if isinstance(value, tuple):
                for i, item in enumerate(value):
                    visit(f"{name}[{i}]", item)
            elif isinstance(value, TensorDescriptor):
                visit(f"{name}.base", value.base)
            elif isinstance(value, torch.Tensor):
                tensor = interp._unwrap_tensor(value)
                if tensor.device.type != "cpu":
                    raise RuleViolation(f"kernel argument {name} is on {tensor.device}; the verifier runs on CPU")
                storage = tensor.untyped_storage()
                found.append(TensorInfo(name=name, data_ptr=tensor.data_ptr(), start=storage.data_ptr(),
                                        end=storage.data_ptr() + storage.nbytes(),
                                        elem_bytes=tensor.element_size(), dtype=dtype_name(tensor.dtype),
                                        numel=tensor.numel()))

        for name, value in call_args.items():
            visit(name, value)
        return cls(found)

    def split(self, addrs: np.ndarray, elem_bytes: int) -> list[tuple[TensorInfo, np.ndarray]] | None:
        """Group int64 *addrs* by tensor argument; ``None`` if any access leaves every storage."""
        lo, hi = int(addrs.min()), int(addrs.max())
        i = bisect.bisect_right(self._starts, lo) - 1
        if i >= 0 and hi + elem_bytes <= self._ends[i]:
            return self._within(i, addrs)
        idx = np.searchsorted(self._starts_np, addrs, side="right") - 1
        ok = idx >= 0
        ok[ok] = addrs[ok] + elem_bytes <= self._ends_np[idx[ok]]
        if not ok.all():
            return None
        parts: list[tuple[TensorInfo, np.ndarray]] = []
        for region in np.unique(idx):
            parts.extend(self._within(int(region), addrs[idx == region]))
        return parts

    def _within(self, region: int, addrs: np.ndarray) -> list[tuple[TensorInfo, np.ndarray]]:
        members = self._members[region]
        if len(members) == 1:
            return [(members[0], addrs)]
        bases = np.array([t.data_ptr for t in members], dtype=np.int64)
        owner = np.clip(np.searchsorted(bases, addrs, side="right") - 1, 0, len(members) - 1)
        return [(members[k], addrs[owner == k]) for k in np.unique(owner)]

    def violation(self, kind: str, addrs: np.ndarray, elem_bytes: int, kernel: str,
                  program: tuple[int, int, int]) -> OutOfBoundsAccess:
        """Describe the out-of-bounds part of an access that :meth:`split` rejected."""
        idx = np.searchsorted(self._starts_np, addrs, side="right") - 1
        ok = idx >= 0
        ok[ok] = addrs[ok] + elem_bytes <= self._ends_np[idx[ok]]
        bad = addrs[~ok]
        first_bad = int(bad[0])
        if ok.any():    # the tensor most of this access's in-bounds elements belong to
            regions, counts = np.unique(idx[ok], return_counts=True)
            home = self._members[int(regions[np.argmax(counts)])][0]
        elif self.tensors:  # nothing in bounds: the nearest storage
            home = min(self.tensors, key=lambda t: min(abs(first_bad - t.start), abs(first_bad - t.end)))
        else:
            return OutOfBoundsAccess(kind, "<none: the kernel has no tensor arguments>", first_bad, 0,
                                     kernel, program, int(bad.size))
        offset = (first_bad - home.data_ptr) // home.elem_bytes
        return OutOfBoundsAccess(kind, home.name, offset, home.storage_bytes // home.elem_bytes,
                                 kernel, program, int(bad.size))


@dataclass
class LaunchContext:
    """One intercepted kernel launch; :meth:`run_program` executes one program id."""

    kernel: str
    grid: tuple[int, int, int]
    tensors: TensorMap
    fn: Any
    args: dict[str, Any]
    call_args: dict[str, Any] = field(default_factory=dict)     # host values as passed (tensors, ints...)
    constexprs: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)       # num_warps, num_stages... as passed

    @property
    def num_programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def coords(self, linear: int) -> tuple[int, int, int]:
        """Grid coordinates of launch-order id *linear* (x fastest, as GPUs dispatch)."""
        gx, gy, _ = self.grid
        return linear % gx, (linear // gx) % gy, linear // (gx * gy)

    def run_program(self, linear: int, arrival: int | None = None) -> None:
        """Run program *linear*; *arrival*: its place in the order programs draw work tickets
        (:mod:`tickets`), launch order when not given."""
        DESK.begin_program(self, self.num_programs, linear if arrival is None else arrival)
        interp.interpreter_builder.set_grid_idx(*self.coords(linear))
        self.fn(**self.args)


class Session:
    """Receives launches and events while :func:`active`; the base runs every program in order.

    Subclasses override :meth:`launch` (program selection and order), :meth:`record_access`,
    :meth:`on_dot`, :meth:`on_ops`.  ``count_ops`` turns on op-count events,
    ``track_precision`` the loaded-precision tags, ``needs_sites`` the source line of accesses.
    """

    count_ops = False
    track_precision = False
    needs_sites = False
    tagging = True                   # with track_precision: off while precision does not matter

    def __init__(self, *, guard: Any = None, candidate_file: str | None = None) -> None:
        self.ctx: LaunchContext | None = None
        self.violation: Exception | None = None
        self.guard = guard
        self.candidate_file = candidate_file
        self.last_parts: list[tuple[TensorInfo, np.ndarray]] = []   # the tensors the last access touched
        self.aperiodic: Any = None           # target-shape tiled inputs read without a period (aperiodic.py)
        #: storage start -> widest float precision its data came from (the storage's own dtype, a task
        #: input's dtype, or what was stored into it): precision follows data through memory
        self.memory_ranks: dict[int, int] = {}

    def memory_rank(self) -> int:
        """The widest precision the data of the last access came from (0: none known)."""
        return max((max(PRECISION_RANK.get(info.dtype, 0), self.memory_ranks.get(info.start, 0))
                    for info, _ in self.last_parts), default=0)

    def mark_stored(self, rank: int) -> None:
        """The last access stored values of precision *rank* into its storages."""
        if rank:
            for info, _ in self.last_parts:
                if rank > self.memory_ranks.get(info.start, 0):
                    self.memory_ranks[info.start] = rank

    def fail(self, message: str) -> None:
        """Record and raise a rule violation (the first one is what the gate reports)."""
        if self.violation is None:
            self.violation = RuleViolation(message)
        raise self.violation

    def paused(self):
        return self.guard.paused() if self.guard is not None else nullcontext()

    def launch(self, ctx: LaunchContext) -> None:
        for pid in range(ctx.num_programs):
            ctx.run_program(pid)

    def site(self) -> int:
        """The candidate-file line of the access being made (0 when not found)."""
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.candidate_file:
                return frame.f_lineno
            frame = frame.f_back
        return 0

    def access(self, kind: str, ptrs: np.ndarray, mask: np.ndarray | None, elem_bytes: int) -> None:
        self.last_parts = []
        if mask is None:
            addrs = ptrs.reshape(-1)
        else:
            mask = mask.astype(bool, copy=False)   # an int mask would index lanes 0 and 1, not select
            addrs = ptrs[np.broadcast_to(mask, ptrs.shape)] if mask.shape != ptrs.shape else ptrs[mask]
        if addrs.size == 0:
            return
        addrs = addrs.astype(np.int64, copy=False)
        ctx = self.ctx
        parts = ctx.tensors.split(addrs, elem_bytes)
        if parts is None:
            self.violation = ctx.tensors.violation(kind, addrs, elem_bytes, ctx.kernel,
                                                   interp.interpreter_builder.grid_idx)
            raise self.violation
        self.last_parts = parts
        self.record_access(kind, parts, elem_bytes, int(ptrs.size), self.site() if self.needs_sites else 0)

    def record_access(self, kind: str, parts: list[tuple[TensorInfo, np.ndarray]], elem_bytes: int,
                      block_elems: int, site: int) -> None:
        """An in-bounds access of a *block_elems* block (masked lanes included), split by tensor
        argument into its unmasked addresses (``kind``: load/store/atomic), from source line *site*."""

    def on_dot(self, a: Any, b: Any, precision: str, loaded_rank: int) -> None:
        """A ``tl.dot`` of handles *a* (..., M, K) and *b* (..., K, N); *precision*: tf32/tf32x3/ieee
        for fp32 operands; *loaded_rank*: the widest float precision its operands were loaded at."""

    def on_ops(self, kind: str, elems: int, ops_per_elem: int) -> None:
        """An op of *kind* (elementwise/transcendental/reduction) over a block of *elems* elements."""


_ORIG_CALL = interp.GridExecutor.__call__
_ORIG_PATCH_LANG = interp._patch_lang
_ORIG_REDUCE_APPLY = interp.ReduceOps.apply
_ORIG_SCAN_APPLY = interp.ScanOps.apply
_patched_langs: set[frozenset[int]] = set()


def _lang_key(fn: Any) -> frozenset[int]:
    return frozenset(id(v) for v in fn.__globals__.values() if v is tl or v is tl.core)


def _memo_patch_lang(fn: Any):
    """``_patch_lang`` that skips re-patching modules already patched in this launch.

    Device-function calls (``tl.max``, ``tl.sum``...) re-patch the language on every
    call upstream; the patch is idempotent, so repeating it only costs time.
    """
    key = _lang_key(fn)
    if key in _patched_langs:
        return interp._LangPatchScope()
    _patched_langs.add(key)
    return _ORIG_PATCH_LANG(fn)


_PLAIN = (bool, int, float, str, type(None), tl.dtype, torch.dtype)


def _plain(value: Any) -> bool:
    """A value a constexpr may hold: numbers, strings, dtypes, None, constexprs and tuples of them."""
    if isinstance(value, tl.constexpr):
        value = value.value
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, _PLAIN) and not isinstance(value, torch.Tensor)


def _argument_ok(value: Any) -> bool:
    """A runtime kernel argument: a tensor, a number, None, a TMA descriptor, or a tuple of those."""
    if isinstance(value, tuple):
        return all(_argument_ok(v) for v in value)
    return isinstance(value, (torch.Tensor, TensorDescriptor, bool, int, float, type(None)))


def _check_arguments(session: Session, executor: Any, call_args: dict[str, Any]) -> None:
    name = executor.fn.__name__
    for arg, value in call_args.items():
        if arg in executor.constexprs:
            if not _plain(value):
                session.fail(f"kernel {name}: constexpr argument `{arg}` is a {type(value).__name__}; constexprs must "
                             "be numbers, strings, dtypes or tuples of them (a tensor passed as a constexpr reaches "
                             "the kernel body as a host object).")
        elif not _argument_ok(value):
            session.fail(f"kernel {name}: argument `{arg}` is a {type(value).__name__}; kernel arguments must be "
                         "tensors, numbers, None or tensor descriptors.")


def _instrumented_call(executor: Any, *args_dev: Any, **kwargs: Any) -> None:
    """``GridExecutor.__call__`` with checks, and the grid loop handed to the active session."""
    session = active_session.current
    if session is None:
        return _ORIG_CALL(executor, *args_dev, **kwargs)
    if executor.pre_run_hooks:
        session.fail(f"kernel {executor.fn.__name__} has pre-run hooks; hooks run host code on the kernel's "
                     "arguments and are not allowed.")
    options = {k: kwargs[k] for k in LAUNCH_OPTION_NAMES if k in kwargs}
    argspec = inspect.getfullargspec(executor.fn)
    kwargs = {k: v for k, v in kwargs.items() if k in argspec.args or k in argspec.kwonlyargs}
    with session.paused():
        args_hst, kwargs_hst = executor._init_args_hst(args_dev, kwargs)   # CPU: shares storage, no copy
    _patched_langs.clear()
    scope = _ORIG_PATCH_LANG(executor.fn)
    _patched_langs.add(_lang_key(executor.fn))
    try:
        call_args = inspect.getcallargs(executor.fn, *args_hst, **kwargs_hst)
        _check_arguments(session, executor, call_args)
        with session.paused():
            tensors = TensorMap.from_args(call_args)
            args = {name: arg if name in executor.constexprs else interp._implicit_cvt(arg)
                    for name, arg in call_args.items()}
        grid = executor.grid(args) if callable(executor.grid) else executor.grid
        grid = tuple(int(g) for g in grid)
        if not 1 <= len(grid) <= 3:
            raise ValueError(f"grid must have 1 to 3 dimensions; got {grid}")
        grid = grid + (1,) * (3 - len(grid))
        interp.interpreter_builder.set_grid_dim(*grid)
        session.ctx = LaunchContext(kernel=executor.fn.__name__, grid=grid, tensors=tensors, fn=executor.fn,
                                    args=args, call_args=call_args, constexprs=tuple(executor.constexprs),
                                    options=options)
        session.launch(session.ctx)
    finally:
        scope.restore()
        _patched_langs.clear()


def _elem_bytes(handle: Any) -> int:
    return max(1, handle.get_element_ty().primitive_bitwidth // 8)


def _rank(dtype: Any) -> int:
    return PRECISION_RANK.get(str(getattr(dtype, "scalar", dtype)), 0)


def _loaded_rank(handle: Any) -> int:
    return getattr(handle, "kf_src", 0)


def _round_tf32(handle: Any) -> Any:
    return interp.TensorHandle(interp._round_f32_to_tf32(handle.data), handle.dtype.scalar)


def _builder_hooks(builder: Any, session: Session) -> dict[str, Any]:
    """name -> wrapper for the builder methods the session needs to see."""
    orig = {name: getattr(builder, name) for name in (*_MEMORY_OPS, *FLOAT_OPS, *FMA_OPS, *SELECT_OPS,
                                                        *TRANSCENDENTAL_OPS)}
    track = session.track_precision

    def masked_load(ptrs, mask, other, cache_policy, is_volatile):
        session.access("load", ptrs.data, mask.data, _elem_bytes(ptrs))
        result = orig["create_masked_load"](ptrs, mask, other, cache_policy, is_volatile)
        if session.aperiodic is not None:
            session.aperiodic.rewrite(ptrs.data, mask.data, result.data, _elem_bytes(ptrs))
        if track:
            # masked-off lanes return `other`: its data (and what the pointers and mask were computed
            # from) is as wide as it came, or an all-false mask would launder fp32 values into fp16
            rank = max(_rank(ptrs.get_element_ty()), session.memory_rank(),
                       *(getattr(h, "kf_src", 0) for h in (ptrs, mask, other) if h is not None))
            if rank:
                result.kf_src = rank
        return result

    def masked_store(ptrs, value, mask, cache_policy):
        if session.aperiodic is not None:      # before access: a re-run's undo restores materialised bytes
            session.aperiodic.wrote(ptrs.data, mask.data, _elem_bytes(ptrs))
        session.access("store", ptrs.data, mask.data, _elem_bytes(ptrs))
        if track:
            session.mark_stored(_loaded_rank(value))
        return orig["create_masked_store"](ptrs, value, mask, cache_policy)

    def loaded(result, ptr_element_ty):
        """Values read from memory carry the widest precision their data came from: the pointer's
        element type, the storage's own dtype, or what was stored there (a cast to fp16 through a
        scratch buffer is still fp32 data)."""
        if track:
            rank = max(_rank(ptr_element_ty), session.memory_rank())
            if rank and isinstance(result, interp.TensorHandle):
                result.kf_src = max(rank, getattr(result, "kf_src", 0))
        return result

    def atomic_rmw(rmw_op, ptr, val, mask, sem, scope):
        if session.aperiodic is not None:
            session.aperiodic.wrote(ptr.data, None if mask is None else mask.data, _elem_bytes(ptr))
        session.access("atomic", ptr.data, None if mask is None else mask.data, _elem_bytes(ptr))
        if track:
            session.mark_stored(_loaded_rank(val))
        return loaded(orig["create_atomic_rmw"](rmw_op, ptr, val, mask, sem, scope), ptr.get_element_ty())

    def atomic_cas(ptr, cmp, val, sem, scope):
        if session.aperiodic is not None:
            session.aperiodic.wrote(ptr.data, None, _elem_bytes(ptr))
        session.access("atomic", ptr.data, None, _elem_bytes(ptr))
        if track:
            session.mark_stored(_loaded_rank(val))
        return loaded(orig["create_atomic_cas"](ptr, cmp, val, sem, scope), ptr.get_element_ty())

    def descriptor_gather(desc, x_offsets, y_offset, type):
        session.last_parts = []
        return loaded(orig["create_descriptor_gather"](desc, x_offsets, y_offset, type), desc.base.dtype.element_ty)

    def dot(a, b, d, input_precision, max_num_imprecise_acc):
        precision = getattr(input_precision, "name", str(input_precision)).lower()
        fp32 = str(a.dtype.scalar) == "fp32" and str(b.dtype.scalar) == "fp32"
        session.on_dot(a, b, precision if fp32 else "", max(_loaded_rank(a), _loaded_rank(b)))
        if fp32 and precision == "tf32":          # tensor cores round fp32 operands to TF32
            a, b = _round_tf32(a), _round_tf32(b)
        return orig["create_dot"](a, b, d, input_precision, max_num_imprecise_acc)

    def dot_scaled(lhs, lhs_scale, lhs_format, rhs, *rest, **kwargs):
        session.on_dot(lhs, rhs, "", max(_loaded_rank(lhs), _loaded_rank(rhs)))
        return orig["create_dot_scaled"](lhs, lhs_scale, lhs_format, rhs, *rest, **kwargs)

    hooks = {"create_masked_load": masked_load, "create_masked_store": masked_store,
             "create_atomic_rmw": atomic_rmw, "create_atomic_cas": atomic_cas,
             "create_dot": dot, "create_dot_scaled": dot_scaled, "create_descriptor_gather": descriptor_gather}

    def counting(name: str, kind: str, per_elem: int, float_only: bool):
        method = orig[name]

        def wrapper(*args, **kwargs):
            result = method(*args, **kwargs)
            if session.count_ops and (not float_only or result.dtype.scalar.is_floating()):
                session.on_ops(kind, result.data.size, per_elem)
            return result
        return wrapper

    for name in FLOAT_OPS:
        hooks[name] = counting(name, "elementwise", 1, False)
    for name in FMA_OPS:
        hooks[name] = counting(name, "elementwise", 2, False)
    for name in SELECT_OPS:
        hooks[name] = counting(name, "elementwise", 1, True)
    for name in TRANSCENDENTAL_OPS:
        hooks[name] = counting(name, "transcendental", 1, False)
    if track:
        for name, method in _all_create_methods(builder).items():
            hooks[name] = _tagging(hooks.get(name, method), session)
    return hooks


def _all_create_methods(builder: Any) -> dict[str, Any]:
    return {name: getattr(builder, name) for name in dir(type(builder))
            if name.startswith("create_") and name not in ("create_masked_load",) and callable(getattr(builder, name))}


def _tagging(method, session: Session):
    """Propagate the loaded-precision tag: a result is as wide as the widest tagged operand."""
    def wrapper(*args, **kwargs):
        result = method(*args, **kwargs)
        if not session.tagging:
            return result
        rank = 0
        for arg in args:
            rank = max(rank, getattr(arg, "kf_src", 0))
        if rank and isinstance(result, interp.TensorHandle) and rank > getattr(result, "kf_src", 0):
            result.kf_src = rank
        return result
    return wrapper


def _carry_tags(inputs: tuple, results: Any, session: Session) -> Any:
    """Reductions and scans compute outside the builder: their results keep the widest loaded
    precision of their inputs (else a reduce would launder fp32 data into an fp16 dot)."""
    if not session.tagging:
        return results
    rank = max((getattr(getattr(t, "handle", None), "kf_src", 0) for t in inputs), default=0)
    if rank:
        for t in results if isinstance(results, tuple) else (results,):
            handle = getattr(t, "handle", None)
            if isinstance(handle, interp.TensorHandle) and rank > getattr(handle, "kf_src", 0):
                handle.kf_src = rank
    return results


def _reduce_apply(self, input):
    session = active_session.current
    if session is not None and session.count_ops and isinstance(input, tuple):   # apply() re-enters with a tuple
        session.on_ops("reduction", int(input[0].handle.data.size), 1)
    result = _ORIG_REDUCE_APPLY(self, input)
    if session is not None and session.track_precision and isinstance(input, tuple):
        _carry_tags(input, result, session)
    return result


def _scan_apply(self, input):
    session = active_session.current
    if session is not None and session.count_ops and isinstance(input, tuple):   # apply() re-enters with a tuple
        session.on_ops("reduction", int(input[0].handle.data.size), 1)
    result = _ORIG_SCAN_APPLY(self, input)
    if session is not None and session.track_precision and isinstance(input, tuple):
        _carry_tags(input, result, session)
    return result


@contextmanager
def active(session: Session) -> Iterator[Session]:
    """Route every kernel launch and interpreter event to *session* for the block's duration."""
    if active_session.current is not None:
        raise RuntimeError("an instrumentation session is already active")
    from .loop_hooks import install
    install()
    builder = interp.interpreter_builder
    hooks = _builder_hooks(builder, session)
    saved = {name: builder.__dict__[name] for name in hooks if name in builder.__dict__}
    for name, hook in hooks.items():
        setattr(builder, name, hook)
    options = builder.options
    # Overflow sanitizing computes checks whose assert is dropped unless options.debug:
    # pure cost here (out-of-range addresses are caught by the bounds check anyway).
    builder.options = dataclasses.replace(options, sanitize_overflow=False)
    interp.GridExecutor.__call__ = _instrumented_call
    interp._patch_lang = _memo_patch_lang
    interp.ReduceOps.apply = _reduce_apply
    interp.ScanOps.apply = _scan_apply
    active_session.current = session
    try:
        yield session
    finally:
        active_session.current = None
        builder.options = options
        interp.GridExecutor.__call__ = _ORIG_CALL
        interp._patch_lang = _ORIG_PATCH_LANG
        interp.ReduceOps.apply = _ORIG_REDUCE_APPLY
        interp.ScanOps.apply = _ORIG_SCAN_APPLY
        for name in hooks:
            if name in saved:
                setattr(builder, name, saved[name])
            else:
                builder.__dict__.pop(name, None)
