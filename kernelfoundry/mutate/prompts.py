"""Render the LLM prompts (``prompts/*.j2``, jinja2) from a mutation request.

Templates: ``system`` (role, candidate-format rules, the prompt variant's sections),
``mutate`` (asks for SEARCH/REPLACE edits), ``rewrite`` (a full kernel), ``fix``
(the parent failed a verifier gate), ``crossover`` (combine two kernels) and
``prompt_mutation`` (rewrite a prompt variant's sections) and ``draft`` (the first kernel of a
task without a seed, :mod:`.drafts`).  A user's ``prompt_dir``
is searched first, so it may override any subset of them; the rest come from the
project's ``prompts/``.  Only plain data reaches the templates (see
:func:`mutation_context`), so a custom template cannot touch the search state.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import jinja2

from .. import data_dir
from ..errors import UserError
from ..task import Task
from .base import MutationRequest, ParentView

#: The shipped templates (package data; the repository's ``prompts/`` in a checkout).
DEFAULT_PROMPT_DIR = data_dir("prompts")
KERNEL_MODES = ("mutate", "rewrite", "fix", "crossover")
TEMPLATES = ("system", *KERNEL_MODES, "prompt_mutation", "draft")

#: How much of long texts the prompt carries.
MAX_FEEDBACK_CHARS = 3000
MAX_INSPIRATION_LINES = 60
MAX_INSPIRATIONS = 3


class PromptDirError(UserError):
    """A prompt directory is missing, or one of its templates does not compile."""


class PromptRenderer:
    """Jinja2 environment over the user's ``prompt_dir`` (if any) then the project's ``prompts/``."""

    def __init__(self, prompt_dir: str | Path | None = None) -> None:
        if not DEFAULT_PROMPT_DIR.is_dir():
            raise PromptDirError(f"the prompt templates directory {DEFAULT_PROMPT_DIR} is missing "
                                 "(a broken installation?).")
        dirs = [DEFAULT_PROMPT_DIR]
        if prompt_dir is not None:
            user = Path(prompt_dir).expanduser()
            if not user.is_dir():
                raise PromptDirError(f"prompt_dir {user} is not a directory of *.j2 templates.")
            dirs.insert(0, user)
        self.dirs = dirs
        self.env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(d) for d in dirs]),
                                      undefined=jinja2.StrictUndefined, autoescape=False,
                                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
        for name in TEMPLATES:
            try:
                self.env.get_template(f"{name}.j2")
            except jinja2.TemplateNotFound:
                raise PromptDirError(f"template {name}.j2 is missing from {', '.join(map(str, dirs))}.") from None
            except jinja2.TemplateSyntaxError as exc:
                raise PromptDirError(f"template {exc.filename or name + '.j2'} line {exc.lineno}: "
                                     f"{exc.message}") from None

    def check_renders(self, task: Task, source: str, variants: list[dict[str, Any]] | None = None) -> None:
        """Render every template once for *task* with *source* as the parent (and each prompt variant).

        Undefined variables and missing includes show only when a template renders; finding
        them here turns a run that would fail every proposal, or crash on its first prompt
        evolution, into one clear error before Ray starts.
        """
        from .base import MutationRequest, ParentView
        parent = ParentView(id=0, source=source, objective=1.0, feedback="objective 1x")
        for variant in variants or [None]:
            request = MutationRequest(task=task, parent=parent, inspirations=[parent], prompt=variant)
            try:
                for mode in KERNEL_MODES:
                    self.mutation_messages(request, mode)
                if variant is not None:
                    self.prompt_mutation_messages(dict(variant, mean_credit=0.0), "improve", [], [], task)
            except jinja2.TemplateError as exc:
                where = f" (prompt variant {variant.get('name') or variant.get('id')})" if variant else ""
                raise PromptDirError(f"a prompt template fails to render{where}: {type(exc).__name__}: "
                                     f"{exc}; template directories: {', '.join(map(str, self.dirs))}.") from None

    def render(self, name: str, context: dict[str, Any]) -> str:
        return self.env.get_template(f"{name}.j2").render(**context).strip() + "\n"

    def mutation_messages(self, request: MutationRequest, mode: str) -> list[dict[str, str]]:
        """System and user messages for a kernel *mode* (mutate, rewrite, fix, crossover)."""
        if mode not in KERNEL_MODES:
            raise ValueError(f"unknown prompt mode {mode!r}; expected one of {KERNEL_MODES}")
        ctx = mutation_context(request, mode)
        return [{"role": "system", "content": self.render("system", ctx)},
                {"role": "user", "content": self.render(mode, ctx)}]

    def draft_messages(self, task: Task, draft: dict[str, Any]) -> list[dict[str, str]]:
        """System and user messages asking for a task's first kernel (*draft*: see :mod:`.drafts`)."""
        from .drafts import draft_context
        ctx = draft_context(task, draft)
        return [{"role": "system", "content": self.render("system", ctx)},
                {"role": "user", "content": self.render("draft", ctx)}]

    def check_draft_renders(self, task: Task) -> None:
        """Render the draft prompt once for *task* (a first draft and a later one with a failure), so
        a broken template stops the run before Ray starts (see :meth:`check_renders`)."""
        from .drafts import example_entry
        example = example_entry("example.py", "PARAMS = {}\n", "a check")
        first = {"n": 1, "max": 2, "example": example, "failures": [], "previous": None}
        later = dict(first, n=2, failures=[{"n": 1, "id": 0, "gate": "load", "reason": "a check"}],
                     previous={"n": 1, "id": 0, "source": "PARAMS = {}\n"})
        try:
            for draft in (first, later):
                self.draft_messages(task, draft)
        except jinja2.TemplateError as exc:
            raise PromptDirError(f"the draft prompt template fails to render: {type(exc).__name__}: {exc}; "
                                 f"template directories: {', '.join(map(str, self.dirs))}.") from None

    def prompt_mutation_messages(self, variant: dict[str, Any], operator: str, feedback: list[dict[str, Any]],
                                 history: list[dict[str, Any]], task: Task | None = None) -> list[dict[str, str]]:
        """Messages asking an LLM to rewrite *variant*'s sections with *operator*."""
        ctx = {"mode": "prompt_mutation", "operator": operator,
               "variant": {"id": variant["id"], "origin": variant.get("origin", ""),
                           "sections": section_list(variant.get("sections") or {})},
               "stats": {k: variant.get(k) for k in ("uses", "credited", "mean_credit", "n_improved")},
               "history": history, "feedback": [feedback_item(f) for f in feedback],
               "task": task_context(task) if task is not None else None,
               "sections": [], "hardware": []}
        return [{"role": "system", "content": self.render("system", ctx)},
                {"role": "user", "content": self.render("prompt_mutation", ctx)}]


def section_list(sections: dict[str, str]) -> list[dict[str, str]]:
    """Sections as ``[{name, title, text}]`` in their stored order."""
    return [{"name": k, "title": k.replace("_", " ").capitalize(), "text": str(v).strip()}
            for k, v in sections.items() if str(v).strip()]


def mutation_context(request: MutationRequest, mode: str) -> dict[str, Any]:
    """The plain data a kernel prompt is rendered from."""
    task = request.task
    partner = request.inspirations[0] if mode == "crossover" and request.inspirations else None
    others = [p for p in request.inspirations if p is not partner][:MAX_INSPIRATIONS]
    variant = request.prompt or {}
    return {
        "mode": mode,
        "task": task_context(task),
        "hardware": hardware_summary(task.hardware),
        "parent": parent_context(request.parent, shorten=False),
        "partner": parent_context(partner, shorten=False) if partner is not None else None,
        "inspirations": [parent_context(p, shorten=True) for p in others],
        "target": (request.target_cell or {}).get("description"),
        "sections": section_list(variant.get("sections") or {}),
        "experiences": [experience_context(e) for e in request.experiences[:MAX_INSPIRATIONS]],
    }


def experience_context(exp: dict[str, Any]) -> dict[str, Any]:
    """A remembered edit of a similar task (kernelfoundry.memory), shortened for a prompt."""
    gain = exp.get("gain")
    what = (f"{math.exp(gain):.2f}x faster than its parent" if isinstance(gain, (int, float)) and gain > 0
            else "made a failing kernel correct")
    return {"task": str(exp.get("task", "")), "what": what, "description": clip(exp.get("description"), 200),
            "diff": clip(exp.get("diff"), 2500)}


def task_context(task: Task) -> dict[str, Any]:
    def shape_text(env: dict[str, int]) -> str:
        return ", ".join(f"{k}={v}" for k, v in env.items())
    inputs = [{"name": s.name, "shape": "[" + ", ".join(map(str, s.shape)) + "]", "dtype": s.dtype}
              for s in task.inputs]
    return {"name": task.name, "description": task.description, "level": task.level,
            "reference": task.reference.strip(), "inputs": inputs, "input_names": list(task.input_names),
            "check_shapes": [shape_text(e) for e in task.check_shapes],
            "target_shapes": [shape_text(e) for e in task.target_shapes],
            "atol": task.atol, "rtol": task.rtol}


def parent_context(view: ParentView, *, shorten: bool) -> dict[str, Any]:
    source = shorten_source(view.source, MAX_INSPIRATION_LINES) if shorten else view.source.rstrip()
    return {"id": view.id, "source": source, "passed": view.passed, "gate": view.gate,
            "objective": fmt_objective(view.objective),
            "feedback": clip(view.feedback, MAX_FEEDBACK_CHARS if not shorten else 400),
            "metrics": hardware_metrics(view.hardware)}


def fmt_objective(value: float | None) -> str:
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "none (not scored)"
    return f"{value:.3f}x speedup over eager PyTorch (estimated)"


def clip(text: str | None, limit: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 20].rstrip() + " ... [truncated]"


def shorten_source(source: str, max_lines: int) -> str:
    """Source without comment-only lines and blank runs, cut to *max_lines*."""
    lines: list[str] = []
    for line in source.splitlines():
        if line.strip().startswith("#") or (not line.strip() and lines and not lines[-1].strip()):
            continue
        lines.append(line.rstrip())
    if len(lines) > max_lines:
        more = len(lines) - max_lines
        lines = lines[:max_lines] + [f"# ... ({more} more lines)"]
    return "\n".join(lines).strip("\n")


def _fmt_time(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return "n/a"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def _fmt_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_fmt_value(v)}" for k, v in list(value.items())[:6])
    return str(value)


def _fmt_breakdown(breakdown: dict[str, Any]) -> str:
    """The model's per-limit times (seconds), largest first."""
    items = sorted(((k, v) for k, v in breakdown.items() if isinstance(v, (int, float))),
                   key=lambda kv: -kv[1])
    return ", ".join(f"{k} {_fmt_time(v)}" for k, v in items[:6])


def hardware_metrics(hardware: dict[str, Any] | None) -> list[str]:
    """One line per hardware target from a candidate's HardwareScore dicts, plus per-shape bounds."""
    out: list[str] = []
    for name, score in (hardware or {}).items():
        if not isinstance(score, dict):
            continue
        lat, base = score.get("latency_s"), score.get("baseline_s")
        parts = [f"{name}: predicted {_fmt_time(lat)}"]
        if isinstance(lat, (int, float)) and isinstance(base, (int, float)) and lat > 0:
            parts.append(f"eager estimate {_fmt_time(base)} ({base / lat:.2f}x)")
        sol = score.get("sol_fraction")
        if isinstance(sol, (int, float)) and math.isfinite(sol):
            parts.append(f"{100 * sol:.0f}% of speed-of-light")
        if score.get("best_params"):
            parts.append(f"best params {_fmt_value(score['best_params'])}")
        line = "; ".join(parts)
        for shape in score.get("per_shape") or []:
            if not isinstance(shape, dict):
                continue
            bits = [f"shape {_fmt_value(shape.get('shape', {}))}"]
            if shape.get("bound"):
                bits.append(f"bound by {shape['bound']}")
            if isinstance(shape.get("breakdown"), dict) and shape["breakdown"]:
                bits.append(f"time by limit {_fmt_breakdown(shape['breakdown'])}")
            line += "\n    " + "; ".join(bits)
        if score.get("compiled"):
            line += f"\n    compiled for {name}: {score['compiled']}"
        out.append(line)
    return out


def hardware_summary(names: tuple[str, ...] | list[str]) -> list[str]:
    """A line per target hardware: figures from the performance model's specs when available."""
    try:
        from ..perfmodel import resolve_hardware
        specs = resolve_hardware(list(names))
    except Exception:       # the perfmodel package may be absent or reject a name: names only
        return [str(n) for n in names]
    lines = []
    for name, spec in zip(names, specs):
        describe = getattr(spec, "summary", None) or getattr(spec, "describe", None)
        lines.append(f"{name}: {describe()}" if callable(describe) else str(name))
    return lines


def feedback_item(item: dict[str, Any]) -> dict[str, Any]:
    """A compact view of one child (or recent candidate) for the prompt-mutation prompt."""
    return {"id": item.get("id"), "passed": item.get("passed"), "gate": item.get("gate"),
            "objective": fmt_objective(item.get("objective")),
            "parent_objective": fmt_objective(item.get("parent_objective")) if "parent_objective" in item else None,
            "feedback": clip(item.get("feedback") or item.get("reason") or "", 300),
            "description": clip(item.get("description") or "", 200)}
