"""KernelBench solutions: a ``ModelNew`` module per elite kernel of a run of an imported problem.

``ModelNew`` subclasses the problem's ``Model`` (run from the problem source embedded in the
file, in a namespace of its own), so its constructor signature, parameters, buffers and
``state_dict`` are the Model's; its ``forward`` calls the candidate's ``launch`` with the
forward tensors and the module's parameters and buffers, at the tuned template parameters.
The kernel part of the file is the candidate itself (still a valid candidate).
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import UserError
from .reference import binding_of, embed, problem_of


def problem_source(task) -> str:
    """The problem file a run's task was imported from; UserError for other tasks."""
    source = problem_of(task.reference)
    if source is None or binding_of(task.reference) is None:
        raise UserError(f"task '{task.name}' was not imported from a KernelBench problem file, so its kernels cannot "
                        "be exported as ModelNew modules; --format kernelbench needs a run started from PROBLEM.py.")
    return source


def modelnew_source(task, kernel_text: str, params: dict[str, Any], param_order: list[str]) -> str:
    """The ModelNew module: a header, the problem (embedded), the kernel text, the ModelNew class."""
    source = problem_source(task)
    binding = binding_of(task.reference)
    forward = binding["forward"]
    names = [a["name"] for a in forward]
    by_name = {a["input"]: a["input"] for a in forward if "input" in a}
    state = {entry[0]: (entry[1], entry[2], len(entry) > 3 and entry[3]) for entry in binding["state"]}
    args = []
    for spec in task.inputs:
        if spec.name in by_name:
            args.append(spec.name)
        elif spec.name in state:
            attr, role, scalar = state[spec.name]
            args.append(f"self.get_{'parameter' if role == 'parameter' else 'buffer'}({attr!r})"
                        + (".reshape(1)" if scalar else ""))
        else:
            raise UserError(f"task '{task.name}': input '{spec.name}' is neither a forward argument nor Model state.")
    ordered = [k for k in param_order if k in params] + [k for k in params if k not in param_order]
    call = f"launch({', '.join(args)}" + "".join(f", {k}={params[k]!r}" for k in ordered) + ")"
    lines = [f'"""KernelBench solution to {task.name}: ModelNew runs KernelFoundry\'s tuned Triton kernels.',
             "", "Load and check it like any KernelBench solution: ModelNew(*get_init_inputs()) takes the",
             "Model's state_dict; forward(*get_inputs()) matches Model within KernelBench's tolerance.",
             '"""', "import torch", "", "# ---- the problem this module answers (run in a namespace of its own) ----",
             f"PROBLEM_SOURCE = {embed(source)}", "_problem = {'__name__': 'kernelbench_problem'}",
             "exec(compile(PROBLEM_SOURCE, '<KernelBench problem>', 'exec'), _problem)",
             "Model = _problem['Model']", "get_inputs = _problem['get_inputs']",
             "get_init_inputs = _problem['get_init_inputs']", "", "",
             "# ---- the kernel: a KernelFoundry candidate, defaults tuned ----", kernel_text.rstrip(), "", "",
             "# ---- the solution ----",
             "class ModelNew(Model):",
             '    """Model with forward computed by the Triton kernels above (same constructor and state)."""', "",
             f"    def forward(self{''.join(f', {n}' for n in names)}):",
             "        with torch.no_grad():",
             f"            return {call}", ""]
    return "\n".join(lines)


def problem_file_name(task) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", task.name) + ".py"
