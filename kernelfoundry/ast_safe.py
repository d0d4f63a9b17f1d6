"""``ast.parse`` behind one lock: CPython 3.11 converts syntax trees to Python objects with a
recursion counter shared by all threads, so two threads parsing at once can fail with
``SystemError: AST constructor recursion depth mismatch``.  Code that may run on several
threads of one process (``verify`` from a thread pool) parses through :func:`parse`."""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.Lock()


def parse(source: str, *args: Any, **kwargs: Any) -> ast.AST:
    """:func:`ast.parse`, one thread at a time."""
    with _LOCK:
        return ast.parse(source, *args, **kwargs)
