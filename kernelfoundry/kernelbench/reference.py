"""The task reference of an imported problem: its ``Model.forward`` as a function of explicit inputs.

The reference is the problem file's own source followed by ``def reference(...)``, which
reads the size symbols off its input shapes, rebuilds ``Model(*get_init_inputs())`` at
those sizes on the ``meta`` device (no memory, no initialisation work; PyTorch dispatch
modes are off meanwhile, so the performance model's op recorder does not price the
constructor) and calls ``forward`` through ``torch.func.functional_call`` with every
parameter and buffer replaced by the matching input.
"""

from __future__ import annotations

from typing import Any

from .shrink import render

MARKER = "# ---- kernelfoundry: the problem's Model.forward with parameters and buffers as inputs ----"


def sizes_of(symbols: dict[str, int], inputs: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """symbol -> (input index, dim) where the reference reads it."""
    where: dict[str, tuple[int, int]] = {}
    for i, spec in enumerate(inputs):
        for d, dim in enumerate(spec["shape"]):
            if isinstance(dim, str):
                where.setdefault(dim, (i, d))
    missing = sorted(set(symbols) - set(where))
    if missing:
        raise ValueError(f"size symbol(s) {missing} appear in no input shape")
    return where


def reference_source(problem_source: str, *, inputs: list[dict[str, Any]], symbols: dict[str, int],
                     init: list[Any], call_args: list[dict[str, Any]]) -> str:
    """The reference's source.  *inputs*: the task inputs in order (name, shape, role,
    module_attr); *init*: the symbolized constructor arguments; *call_args*: forward's
    arguments, each ``{"input": name}`` or ``{"const": value}``."""
    names = [s["name"] for s in inputs]
    sizes = sizes_of(symbols, inputs)
    state = {s["module_attr"]: s["name"] for s in inputs if s["role"] != "input"}
    args = [a["input"] if "input" in a else render(a["const"]) for a in call_args]
    lines = [problem_source.rstrip(), "", "", MARKER,
             "import torch as _kf_torch", "",
             f"_KF_SIZES = {sizes!r}", "",
             f"def reference({', '.join(names)}):",
             f"    _kf_inputs = ({', '.join(names)}{',' if len(names) == 1 else ''})",
             "    env = {s: _kf_inputs[i].shape[d] for s, (i, d) in _KF_SIZES.items()}",
             f"    init = {render(init)}",
             "    with _kf_torch._C._DisableTorchDispatch(), _kf_torch.device('meta'):",
             "        model = Model(*init)",
             "    state = {" + ", ".join(f"{k!r}: {v}" for k, v in state.items()) + "}",
             "    with _kf_torch.no_grad():",
             f"        return _kf_torch.func.functional_call(model, state, ({', '.join(args)}"
             f"{',' if len(args) == 1 else ''}), strict=True)", ""]
    return "\n".join(lines)
