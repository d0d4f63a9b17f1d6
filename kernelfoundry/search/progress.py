"""A live progress line on a terminal; periodic plain lines when output is a file or pipe."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressLine:
    def __init__(self, budget: int, *, stream: TextIO | None = None, quiet: bool = False,
                 every_s: float = 10.0):
        self.budget = budget
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every_s = every_s
        self.last = 0.0
        self.started = time.time()
        self.width = 0

    def due(self) -> bool:
        """Whether the next :meth:`update` prints (so callers can skip computing what only it shows)."""
        return not self.quiet and (self.tty or time.time() - self.last >= self.every_s)

    def update(self, *, n: int, correct: int, best: float | None, coverage: float, cost: float,
               in_flight: int, force: bool = False, nodes: dict[str, int] | None = None) -> None:
        if self.quiet:
            return
        now = time.time()
        if not (self.tty or force or now - self.last >= self.every_s):
            return
        self.last = now
        elapsed = now - self.started
        rate = n / elapsed * 60 if elapsed > 0 else 0.0
        best_s = f"{best:.3f}x" if best is not None else "-"
        line = (f"[{n}/{self.budget}] correct {correct}  best {best_s}  coverage {coverage:.1%}  "
                f"llm ${cost:.4f}  in flight {in_flight}  {rate:.1f}/min  {elapsed:.0f}s")
        if nodes and len(nodes) > 1:           # on a cluster: workers per node
            line += f"  workers/node {'+'.join(str(k) for k in nodes.values())}"
        if self.tty:
            pad = max(0, self.width - len(line))
            self.stream.write("\r" + line + " " * pad)
            self.width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        """Print a line without garbling the live progress line."""
        if self.quiet:
            return
        if self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.width = 0
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.width and not self.quiet:
            self.stream.write("\n")
            self.stream.flush()
