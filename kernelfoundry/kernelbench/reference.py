"""The task reference of an imported problem: its ``Model.forward`` as a function of explicit inputs.

The reference runs the problem file's own source (embedded as a string, in a namespace of its
own so its names cannot clash with the reference's) and defines ``def reference(...)``, which
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


def embed(source: str) -> str:
    """*source* as a Python string literal (triple-quoted and raw where that is exact)."""
    if "'''" not in source and not source.rstrip("\n").endswith("\\") and "\r" not in source:
        return "r'''" + source + "'''"
    return repr(source)


def problem_of(reference: str) -> str | None:
    """The problem source embedded in an imported task's reference (None for other tasks)."""
    import ast
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["_KF_PROBLEM"] \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node.value.value
    return None


def binding_of(reference: str) -> dict[str, Any] | None:
    """``_KF_BINDING`` of an imported task's reference: forward's arguments (``{"input", "name"}``)
    and the inputs that are Model state (``[input, module attribute, role, 0-d]``; a 0-d one is
    a [1] input)."""
    import ast
    try:
        tree = ast.parse(reference)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["_KF_BINDING"]:
            return ast.literal_eval(node.value)
    return None


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
    state = {s["module_attr"]: s["name"] + (".reshape(())" if s.get("scalar") else "")
             for s in inputs if s["role"] != "input"}
    args = [a["input"] if "input" in a else render(a["const"]) for a in call_args]
    binding = {"forward": [{k: v for k, v in a.items() if k in ("input", "name")} for a in call_args],
               "state": [[s["name"], s["module_attr"], s["role"], bool(s.get("scalar"))]
                         for s in inputs if s["role"] != "input"]}
    lines = ["import torch as _kf_torch", "", f"_KF_PROBLEM = {embed(problem_source)}", "",
             "_kf_problem = {'__name__': 'kf_problem'}",
             "exec(compile(_KF_PROBLEM, '<KernelBench problem>', 'exec'), _kf_problem)", "", MARKER,
             f"_KF_SIZES = {sizes!r}",
             f"_KF_BINDING = {binding!r}   # forward's arguments; launch inputs that are Model parameters/buffers",
             "",
             f"def reference({', '.join(names)}):",
             f"    _kf_inputs = ({', '.join(names)}{',' if len(names) == 1 else ''})",
             "    env = {s: _kf_inputs[i].shape[d] for s, (i, d) in _KF_SIZES.items()}",
             f"    init = {render(init)}",
             "    with _kf_torch._C._DisableTorchDispatch(), _kf_torch.device('meta'):",
             "        model = _kf_problem['Model'](*init)",
             "    state = {" + ", ".join(f"{k!r}: {v}" for k, v in state.items()) + "}",
             "    with _kf_torch.no_grad():",
             f"        return _kf_torch.func.functional_call(model, state, ({', '.join(args)}"
             f"{',' if len(args) == 1 else ''}), strict=True)", ""]
    return "\n".join(lines)
