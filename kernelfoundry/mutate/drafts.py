"""The draft prompt: what an LLM is told when it writes a task's first kernel (docs/llm.md, "Drafts").

A task without a seed (the KernelBench seed generator has no template for one of its ops)
starts from drafts.  The driver (:mod:`kernelfoundry.search.drafts`) sends each draft job a
plain-data ``draft`` dict; :func:`draft_context` turns it and the task into the data
``prompts/draft.j2`` renders:

``n``, ``max``      this draft's number and the most the run will ask for
``example``         ``{"name", "why", "source"}``: the closest kernel the run knows (a memory
                    elite of a similar task, else one of the project's seed kernels)
``failures``        ``[{"n", "id", "gate", "reason"}]``: earlier drafts' verifier verdicts
``previous``        ``{"n", "id", "source"}`` of the last failed draft, or None

For an imported KernelBench problem the reference shown is the problem's own source, with the
launch order of forward's arguments and the Model's parameters and buffers spelled out.
"""

from __future__ import annotations

from typing import Any

from ..task import Task
from .prompt_context import clip, hardware_summary, task_context

#: How much of long texts a draft prompt carries.
MAX_EXAMPLE_CHARS = 8000
MAX_PREVIOUS_CHARS = 8000
MAX_REASON_CHARS = 1500
MAX_FAILURES = 4


def example_entry(name: str, source: str, why: str) -> dict[str, str]:
    """An example kernel for the draft prompt."""
    return {"name": str(name), "why": str(why), "source": clip(source, MAX_EXAMPLE_CHARS)}


def draft_context(task: Task, draft: dict[str, Any]) -> dict[str, Any]:
    """The plain data the system and draft templates render from."""
    from ..kernelbench import binding_of, problem_of
    ctx_task = task_context(task)
    problem = problem_of(task.reference)
    launch_order = None
    if problem is not None:
        ctx_task["reference"] = problem.strip()
        launch_order = problem_inputs(task, binding_of(task.reference) or {})
    failures = [dict(f, reason=clip(f.get("reason"), MAX_REASON_CHARS))
                for f in (draft.get("failures") or [])][-MAX_FAILURES:]
    previous = draft.get("previous")
    if previous:
        previous = dict(previous, source=clip(previous.get("source"), MAX_PREVIOUS_CHARS))
    return {
        "mode": "draft",
        "task": ctx_task,
        "hardware": hardware_summary(task.hardware),
        "sections": [],
        "problem": {"inputs": launch_order} if problem is not None else None,
        "no_seed_reason": task.no_seed_reason or "",
        "draft": {"n": int(draft.get("n", 1)), "max": int(draft.get("max", 1)),
                  "example": draft.get("example"), "failures": failures, "previous": previous or None},
    }


def problem_inputs(task: Task, binding: dict[str, Any]) -> list[dict[str, str]]:
    """Each launch input of an imported problem and what it is in the problem's Model."""
    forward = {a.get("input"): a.get("name") for a in binding.get("forward") or [] if isinstance(a, dict)}
    state = {s[0]: s for s in binding.get("state") or [] if isinstance(s, (list, tuple)) and len(s) >= 3}
    out = []
    for spec in task.inputs:
        if spec.name in state:
            _, attr, role, *rest = state[spec.name]
            what = f"`self.{attr}`, the Model's {role}"
            if rest and rest[0]:
                what += " (0-d in the Model: passed with shape [1])"
        elif forward.get(spec.name):
            what = f"forward's argument `{forward[spec.name]}`"
        else:
            what = "an input of forward"
        out.append({"name": spec.name, "what": what,
                    "shape": "[" + ", ".join(map(str, spec.shape)) + "]", "dtype": spec.dtype})
    return out
