"""Which dims of an imported problem are one size: the problem's own variables, not equal values.

Two dims with the same value in a problem file are often a coincidence (``batch_size = 16``,
``depth = 16`` and ``out_channels = 16``; ``in_channels = 32`` and ``height = 32``).  Sharing
one size symbol would force them to move together at the check shapes (and, for dims of at
most 16, keep all of them literal), so a convolution's check input could not shrink.

:func:`probe` runs the problem on the meta device once per module-level int global (the
variables ``get_inputs()`` and ``get_init_inputs()`` read), set to twice its value: the dims
and constructor ints that move from ``v`` to ``2 v`` belong to that global.  A global whose
move alone leaves ``Model(*init)(*inputs)`` runnable is *free*: its dims get a symbol of their
own.  The occurrences of a global whose move alone breaks the Model (it must agree with another
size of that value), and dims no global controls, are keyed by their value as before, so dims
that must agree still share one symbol.  The check at the check shapes validates the result;
the import falls back to plain value keys when it fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

Key = tuple[str, Any]              # ("g", global name) or ("v", value)


@dataclass
class Identity:
    """Keys of tensor dims ``(input name, dim)`` and constructor ints (by path); the free globals,
    and those of them (at most 16) that only size forward inputs (a batch, a depth)."""

    dims: dict[tuple[str, int], Key] = field(default_factory=dict)
    init: dict[tuple[int, ...], Key] = field(default_factory=dict)
    globals: dict[str, Key] = field(default_factory=dict)
    small: set[Key] = field(default_factory=set)

    def key(self, name: str, d: int, value: int) -> Key:
        return self.dims.get((name, d), ("v", value))


def flat_ints(value: Any, path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], int]]:
    """(path, int) of every plain int of a JSON-like constructor argument (tuples tagged)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [(path, value)]
    if isinstance(value, dict) and set(value) == {"tuple"}:
        value = value["tuple"]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in flat_ints(v, path + (i,))]
    return []


def int_globals(ns: dict[str, Any]) -> dict[str, int]:
    return {k: v for k, v in ns.items() if type(v) is int and not k.startswith("_") and v >= 2}


def probe(ns: dict[str, Any], seed: int, inputs: list[dict[str, Any]], init: list[Any],
          plain: Callable[[Any, str], Any], keep_at_most: int) -> Identity:
    """The :class:`Identity` of the problem in namespace *ns* (its globals are restored after)."""
    ident = Identity()
    tensor_names = [s["name"] for s in inputs if s["role"] == "input"]
    state_names = {s["module_attr"]: s["name"] for s in inputs if s["role"] != "input"}
    target = {s["name"]: s["target"] for s in inputs}
    init_flat = dict(flat_ints(init))
    free: dict[str, bool] = {}
    owned: dict[str, list[tuple[str, Any]]] = {}
    for g, v in int_globals(ns).items():
        ns[g] = 2 * v
        try:
            with torch.device("meta"):
                torch.manual_seed(seed)
                values = list(ns["get_inputs"]())
                torch.manual_seed(seed)
                init_values = list(ns["get_init_inputs"]())
                new_init = [plain(x, "a constructor argument") for x in init_values]
                model = ns["Model"](*init_values)
            tensors = [x for x in values if isinstance(x, torch.Tensor)]
            shapes = dict(zip(tensor_names, (list(t.shape) for t in tensors)))
            for attr, t in list(model.named_parameters()) + list(model.named_buffers()):
                if attr in state_names:
                    shapes[state_names[attr]] = list(t.shape) or [1]
            moved = []
            for name, shape in shapes.items():
                old = target.get(name)
                if old is not None and len(old) == len(shape):
                    moved += [("dim", (name, d)) for d, (a, b) in enumerate(zip(old, shape)) if a == v and b == 2 * v]
            for path, b in flat_ints(new_init):
                if init_flat.get(path) == v and b == 2 * v:
                    moved.append(("init", path))
            try:
                with torch.device("meta"), torch.no_grad():
                    model(*values)
                free[g] = True
            except Exception:  # noqa: BLE001 - the Model needs this size to agree with another
                free[g] = False
            owned[g] = moved
        except Exception:  # noqa: BLE001 - the problem cannot run with this global moved: not a size
            pass
        finally:
            ns[g] = v
    seen: dict[tuple[str, Any], str] = {}
    for g, moved in owned.items():           # an occurrence two globals move is nobody's
        for occ in moved:
            seen[occ] = g if occ not in seen else ""
    for g, moved in owned.items():
        if not free[g]:
            continue
        key: Key = ("g", g)
        ident.globals[g] = key
        mine = [occ for occ in moved if seen[occ] == g]
        for kind, where in mine:
            if kind == "dim":
                ident.dims[where] = key
            else:
                ident.init[where] = key
        if mine and ns[g] <= keep_at_most and all(kind == "dim" and where[0] in tensor_names
                                                  for kind, where in mine):
            ident.small.add(key)
    return ident
