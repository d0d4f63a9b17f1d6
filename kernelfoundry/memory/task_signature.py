"""A task's signature in the experience memory, and how similar two signatures are.

The signature is what transfers between tasks: the op kind (from the reference's aten
ops, the fidelity datasets' families), the level, the input dtypes, a coarse shape class
and the target hardware.  Two runs of the same task have similarity 1; a softmax and a
cross-entropy share less than two softmaxes of different widths.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

#: weights of the parts of a signature in :func:`similarity` (they sum to 1)
WEIGHTS = {"op_kind": 0.5, "shape_class": 0.2, "dtypes": 0.15, "hardware": 0.1, "level": 0.05}


@dataclass(frozen=True)
class TaskSignature:
    task: str                 # the task's name (a memory can leave one task out)
    op_kind: str              # kernelfoundry.fidelity.opkind.KINDS
    level: int
    dtypes: str               # sorted, comma-separated input dtypes
    shape_class: str          # "<rows>x<row length>" in decades, e.g. "r3xl4"
    hardware: str             # sorted, comma-separated hardware names

    to_dict = asdict

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TaskSignature":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})

    @property
    def key(self) -> str:
        return "|".join((self.op_kind, str(self.level), self.dtypes, self.shape_class, self.hardware))


def shape_class(shapes: dict[str, tuple[int, ...]]) -> str:
    """Decades of the rows and of the row length of the largest input (row = its last dim)."""
    if not shapes:
        return "r0xl0"
    shape = max(shapes.values(), key=lambda s: math.prod(s) if s else 1)
    last = shape[-1] if shape else 1
    rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
    return f"r{_decade(rows)}xl{_decade(last)}"


def _decade(n: int) -> int:
    return int(math.log10(max(int(n), 1)))


def signature_of(task, hardware: list[str] | tuple[str, ...]) -> TaskSignature:
    """The signature of *task* on *hardware* (op kind from its reference profile)."""
    try:
        from ..fidelity import op_kind
        kind = op_kind(task)
    except Exception:  # noqa: BLE001 - a reference the profiler cannot run still gets a signature
        kind = "elementwise"
    shapes = task.input_shapes(task.target_shapes[0]) if task.target_shapes else {}
    return TaskSignature(task=task.name, op_kind=kind, level=int(task.level),
                         dtypes=",".join(sorted({i.dtype for i in task.inputs})),
                         shape_class=shape_class(shapes), hardware=",".join(sorted(hardware)))


def similarity(a: TaskSignature, b: TaskSignature) -> float:
    """1 for equal signatures; 0 for different op kinds (the memory transfers within an op kind),
    else at least WEIGHTS["op_kind"] plus the matching parts (see WEIGHTS)."""
    if a.op_kind != b.op_kind:
        return 0.0
    s = WEIGHTS["op_kind"] + WEIGHTS["level"] * (a.level == b.level)
    s += WEIGHTS["dtypes"] * _jaccard(a.dtypes, b.dtypes) + WEIGHTS["hardware"] * _jaccard(a.hardware, b.hardware)
    s += WEIGHTS["shape_class"] * _shape_closeness(a.shape_class, b.shape_class)
    return round(s, 6)


def _jaccard(a: str, b: str) -> float:
    sa, sb = set(filter(None, a.split(","))), set(filter(None, b.split(",")))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def _shape_closeness(a: str, b: str) -> float:
    """1 for the same decades, falling by a third per decade apart (rows and row length)."""
    try:
        ra, la = (int(p[1:]) for p in a.split("x"))
        rb, lb = (int(p[1:]) for p in b.split("x"))
    except (ValueError, IndexError):
        return float(a == b)
    return max(0.0, 1.0 - (abs(ra - rb) + abs(la - lb)) / 3.0)
