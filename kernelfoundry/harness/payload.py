"""The contract between the driver and the sandboxed child: what a job payload may carry.

The child never sees the task's reference: its copy of the task carries a stub that
raises, so nothing the candidate does inside the child can call or read it.
"""

from __future__ import annotations

from typing import Any

DEFAULT_TRACE_PROGRAMS = 4
REFERENCE_STUB = ("def reference(*inputs):\n"
                  "    raise RuntimeError('the sandboxed child has no reference: the driver judges')\n")


def child_task(task_dict: dict[str, Any]) -> dict[str, Any]:
    """The task as the child may see it: everything but the reference."""
    return {**task_dict, "reference": REFERENCE_STUB}
