"""Render the LLM prompts (``prompts/*.j2``, jinja2) from a mutation request.

Templates: ``system`` (role, candidate-format rules, the prompt variant's sections),
``mutate`` (asks for SEARCH/REPLACE edits), ``rewrite`` (a full kernel), ``fix``
(the parent failed a verifier gate), ``crossover`` (combine two kernels) and
``prompt_mutation`` (rewrite a prompt variant's sections) and ``draft`` (the first kernel of a
task without a seed, :mod:`.drafts`).  A user's ``prompt_dir``
is searched first, so it may override any subset of them; the rest come from the
project's ``prompts/``.  Only plain data reaches the templates (built by :mod:`.prompt_context`
and, for drafts, :mod:`.drafts`), so a custom template cannot touch the search state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from .. import data_dir
from ..errors import UserError
from ..task import Task
from .base import MutationRequest
from .drafts import draft_context, example_entry
from .prompt_context import feedback_item, mutation_context, section_list, task_context

#: The shipped templates (package data; the repository's ``prompts/`` in a checkout).
DEFAULT_PROMPT_DIR = data_dir("prompts")
KERNEL_MODES = ("mutate", "rewrite", "fix", "crossover")
TEMPLATES = ("system", *KERNEL_MODES, "prompt_mutation", "draft")


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
        ctx = draft_context(task, draft)
        return [{"role": "system", "content": self.render("system", ctx)},
                {"role": "user", "content": self.render("draft", ctx)}]

    def check_draft_renders(self, task: Task) -> None:
        """Render the draft prompt once for *task* (a first draft and a later one with a failure), so
        a broken template stops the run before Ray starts (see :meth:`check_renders`)."""
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
