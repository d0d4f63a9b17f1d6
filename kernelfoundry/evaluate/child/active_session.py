"""The trace session interpreter events go to: :func:`trace_hooks.active` sets it for its block.

A module of its own so that what the hooks install into Triton's interpreter (libdevice's extern
calls, installed through :mod:`loop_hooks` and :mod:`interpreter_gaps`) reaches the session
without importing :mod:`trace_hooks`.
"""

from __future__ import annotations

from typing import Any

#: The active :class:`trace_hooks.Session`, or None outside :func:`trace_hooks.active`.
current: Any = None
