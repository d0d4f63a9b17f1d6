"""Ctrl-C reaches the search loop even when the KeyboardInterrupt it raises is swallowed."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from kernelfoundry.search.interrupt import sticky_interrupt


def _swallowing_callback() -> bool:
    """What a noexcept callback does with an exception: report it and return."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):           # the handler runs at the next bytecode boundary
            pass
    except KeyboardInterrupt:
        return True
    return False


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler, whatever pytest inherited (started in the background, SIGINT is ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_swallowed_interrupt_leaves_the_event_set_and_the_handler_is_restored(python_sigint):
    with sticky_interrupt() as stop:
        assert stop is not None and not stop.is_set()
        assert _swallowing_callback(), "the handler must still raise KeyboardInterrupt at once"
        assert stop.is_set(), "the loop's next _check_stop must see it"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_search_loop_stops_on_the_event():
    from kernelfoundry.search.loop import SearchDriver
    driver = SearchDriver.__new__(SearchDriver)
    driver.settings = type("S", (), {"stop": threading.Event()})()
    driver._check_stop()
    driver.settings.stop.set()
    with pytest.raises(KeyboardInterrupt):
        driver._check_stop()


def test_nothing_changes_off_the_main_thread_or_under_another_handler(python_sigint):
    seen = []
    thread = threading.Thread(target=lambda: seen.append(sticky_interrupt().__enter__()))
    thread.start()
    thread.join()
    assert seen == [None]
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with sticky_interrupt() as stop:
            assert stop is None and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
