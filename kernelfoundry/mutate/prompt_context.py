"""The plain data the prompt templates render from: :mod:`.prompts` renders it, and :mod:`.drafts`
builds the draft prompt's from the same pieces.

:func:`mutation_context` is a kernel prompt's (the task, the target hardware, the parent, the
crossover partner and inspirations, the prompt variant's sections, remembered edits);
:func:`task_context`, :func:`section_list` and :func:`feedback_item` (a child, for the
prompt-mutation prompt) serve the other prompts too; :func:`hardware_summary`,
:func:`hardware_metrics`, :func:`clip` and :func:`shorten_source` shape their text.  Only plain
data reaches the templates, so a custom template cannot touch the search state.
"""

from __future__ import annotations

import math
from typing import Any

from ..task import Task
from .base import MutationRequest, ParentView

#: How much of long texts the prompt carries.
MAX_FEEDBACK_CHARS = 3000
MAX_INSPIRATION_LINES = 60
MAX_INSPIRATIONS = 3


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
