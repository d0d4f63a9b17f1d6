"""Inputs for the checks: seeded random values by profile (correctness), untouched buffers (trace).

Float inputs follow a value profile (:data:`PROFILES`); integer inputs draw
uniformly from ``[low, high)`` and bool inputs are fair coin flips, whatever the
profile.  Every :meth:`InputFactory.make` call draws fresh values from a generator
seeded with ``(seed, call counter)``, so runs are reproducible yet no two calls
see the same data.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import torch

from ..task import DTYPE_BYTES, Task

TORCH_DTYPES = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
    "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}

#: Value profiles for float inputs, in the order the correctness gate runs them.
PROFILES = ("normal", "uniform", "tiny", "large", "near_one", "sparse", "wide")
PROFILE_DOC = {
    "normal": "standard normal",
    "uniform": "uniform in [-1, 1)",
    "tiny": "standard normal x 1e-6",
    "large": "standard normal x 1e3",
    "near_one": "1 + 0.01 x standard normal",
    "sparse": "standard normal with 90% zeros",
    "wide": "standard normal x 1e5, beyond fp16's range (tasks with fp32/fp64 inputs only): a kernel that "
            "computes an fp32 task in fp16 overflows",
}
#: Profiles that only apply when some float input is wider than 16 bits.
WIDE_ONLY = ("wide",)
#: The profile of the long-row run (:func:`correctness.plan_span_runs`), never a check shape's: values far
#: from zero (one-pass variances cancel, exp without a max subtraction overflows) and a ramp along the last
#: dimension, rising in even rows and falling in odd ones, so a row's largest values sit at one end (a max
#: taken over part of a row misses them).
LONG_PROFILE = "offset"
PROFILE_DOC[LONG_PROFILE] = ("1e5 + 1e3 x standard normal + a ramp of 2e3 along the last dimension (rising in "
                             "even rows, falling in odd ones); 16-bit inputs: the same without the 1e5")
#: Ramp height and offset of :data:`LONG_PROFILE` (16-bit float inputs get no offset: fp16 ends at 65504).
RAMP, OFFSET = 2e3, 1e5


def profiles_for(task: Task, wanted: tuple[str, ...] = PROFILES) -> tuple[str, ...]:
    """The profiles the correctness gate runs for *task* (only ``normal`` without float inputs)."""
    floats = [spec.dtype for spec in task.inputs if spec.is_float]
    if not floats:
        return ("normal",)
    wide = any(d in ("float32", "float64") for d in floats)
    return tuple(p for p in wanted if wide or p not in WIDE_ONLY)
#: Integer trace inputs at least this large are not filled (a constant low value instead).
FILL_LIMIT_BYTES = 64 << 20


def _ramp(shape: tuple[int, ...]) -> torch.Tensor:
    """0..1 along the last dimension, reversed in every odd row (a row: one index of the leading dims)."""
    last = shape[-1] if shape else 1
    rows = math.prod(shape[:-1]) if shape else 1
    up = torch.linspace(0.0, 1.0, last, dtype=torch.float32) if last > 1 else torch.zeros(max(last, 0))
    ramp = up.repeat(rows, 1)
    ramp[1::2] = 1.0 - ramp[1::2]
    return ramp.reshape(shape)


def _float_values(profile: str, shape: tuple[int, ...], gen: torch.Generator, *, narrow: bool = False
                  ) -> torch.Tensor:
    """Values of *profile*; *narrow*: for a 16-bit float input (the long-row profile stays in fp16's range)."""
    normal = torch.randn(shape, generator=gen, dtype=torch.float32)
    if profile == "normal":
        return normal
    if profile == "uniform":
        return torch.rand(shape, generator=gen, dtype=torch.float32) * 2 - 1
    if profile == "tiny":
        return normal * 1e-6
    if profile == "large":
        return normal * 1e3
    if profile == "near_one":
        return 1 + 0.01 * normal
    if profile == "sparse":
        keep = torch.rand(shape, generator=gen) >= 0.9
        return normal * keep
    if profile == "wide":
        return normal * 1e5
    if profile == LONG_PROFILE:
        return (0.0 if narrow else OFFSET) + normal * 1e3 + RAMP * _ramp(shape)
    raise ValueError(f"unknown value profile {profile!r}; known: {', '.join(PROFILES + (LONG_PROFILE,))}")


class InputFactory:
    """Fresh, reproducible random inputs for a task: one generator seed per call."""

    def __init__(self, task: Task, seed: int):
        self.task = task
        self.seed = int(seed)
        self.calls = 0

    def make(self, env: dict[str, int], profile: str = "normal", *, call: int | None = None) -> list[torch.Tensor]:
        """One tensor per task input, in task order, for shape binding *env*.

        *call* numbers the draw explicitly (the sandboxed child and the judge must draw the same
        values); by default draws are numbered 1, 2, 3... in call order.
        """
        self.calls += 1
        call = self.calls if call is None else int(call)
        gen = torch.Generator().manual_seed((self.seed * 1_000_003 + call) % (2 ** 63))
        tensors = []
        for spec in self.task.inputs:
            shape = spec.concrete_shape(env)
            dtype = TORCH_DTYPES[spec.dtype]
            if spec.is_float:
                narrow = spec.dtype in ("float16", "bfloat16")
                tensors.append(_float_values(profile, shape, gen, narrow=narrow).to(dtype))
            elif spec.dtype == "bool":
                tensors.append(torch.randint(0, 2, shape, generator=gen).bool())
            else:
                low, high = spec.bound(spec.low, env), spec.bound(spec.high, env)
                tensors.append(torch.randint(low, high, shape, generator=gen, dtype=torch.int64).to(dtype))
        return tensors


def trace_value_maker(task: Task, env: dict[str, int], seed: int, index: int):
    """``make(n) -> 1-D tensor`` drawing trace input *index*'s values: the "normal" profile for
    floats, uniform in ``[low, high)`` for integers; seeded by (*seed*, *index*), so the judge draws
    the values a trace ran on again (:mod:`trace_values`)."""
    spec = task.inputs[index]
    dtype = TORCH_DTYPES[spec.dtype]
    gen = torch.Generator().manual_seed((int(seed) * 7919 + index) % (2 ** 63))
    if spec.is_float:
        return lambda n: torch.randn(n, generator=gen).to(dtype)
    low = 0 if spec.dtype == "bool" else spec.bound(spec.low, env)
    high = 2 if spec.dtype == "bool" else spec.bound(spec.high, env)
    return lambda n: torch.randint(low, high, (n,), generator=gen, dtype=torch.int64).to(dtype)


def trace_inputs(task: Task, env: dict[str, int], seed: int = 0) -> tuple[list[torch.Tensor], list]:
    """Inputs for tracing at a target shape: real values (:func:`trace_value_maker`) at the memory
    cost of one tile each (see :mod:`tiled`).

    Returns the tensors and the mappings to release once the trace is done.
    """
    from .tiled import filled_input
    tensors, mappings = [], []
    for i, spec in enumerate(task.inputs):
        tensor, mapping = filled_input(spec.concrete_shape(env), TORCH_DTYPES[spec.dtype],
                                       trace_value_maker(task, env, seed, i))
        tensors.append(tensor)
        mappings.append(mapping)
    return tensors, mappings


def empty_inputs(task: Task, env: dict[str, int], seed: int = 0) -> list[torch.Tensor]:
    """Inputs for tracing at a target shape, touching as little memory as possible.

    Float inputs are ``torch.empty`` (pages stay untouched until a sampled program
    reads them).  Integer inputs must hold valid values: filled uniformly in
    ``[low, high)`` below :data:`FILL_LIMIT_BYTES`, else the constant ``low``
    (zero-valued ones come from ``calloc``, so untouched pages still cost nothing).
    """
    gen = torch.Generator().manual_seed(int(seed) % (2 ** 63))
    tensors = []
    for spec in task.inputs:
        shape = spec.concrete_shape(env)
        dtype = TORCH_DTYPES[spec.dtype]
        if spec.is_float:
            tensors.append(torch.empty(shape, dtype=dtype))
            continue
        low = 0 if spec.dtype == "bool" else spec.bound(spec.low, env)
        high = 2 if spec.dtype == "bool" else spec.bound(spec.high, env)
        nbytes = math.prod(shape) * DTYPE_BYTES[spec.dtype]
        if nbytes < FILL_LIMIT_BYTES:
            values = torch.randint(low, high, shape, generator=gen, dtype=torch.int64)
            tensors.append(values.bool() if dtype == torch.bool else values.to(dtype))
        elif low == 0:
            np_dtype = np.bool_ if dtype == torch.bool else torch.empty(0, dtype=dtype).numpy().dtype
            tensors.append(torch.from_numpy(np.zeros(shape, dtype=np_dtype)))
        else:
            tensors.append(torch.full(shape, low, dtype=dtype))
    return tensors


def digest(tensor: torch.Tensor) -> str:
    """A short hash of a tensor's bytes (inputs before and after ``launch``)."""
    data = tensor.detach().reshape(-1).contiguous().view(torch.uint8).numpy()
    return hashlib.sha256(data.tobytes()).hexdigest()[:32]
