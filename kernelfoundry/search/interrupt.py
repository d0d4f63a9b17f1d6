"""Ctrl-C that cannot be lost: the first SIGINT also sets an event the search loop polls.

Python turns SIGINT into a KeyboardInterrupt in whatever the main thread runs next.
When that is a callback Ray's core worker makes from C++ during ``ray.wait`` (a
"noexcept" Cython function), the exception is printed as "Exception ignored" and
dropped: the run went on to its budget (seen under load in the Ctrl-C test). The
event stays set, so the loop's next ``_check_stop`` raises it again.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


@contextlib.contextmanager
def sticky_interrupt() -> Iterator[threading.Event | None]:
    """Within the block, SIGINT sets the yielded event and raises KeyboardInterrupt.

    Yields None (and changes nothing) off the main thread or when SIGINT is ignored
    or handled by someone else (an embedding application).
    """
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield None
        return
    stop = threading.Event()

    def on_sigint(signum, frame):
        stop.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
