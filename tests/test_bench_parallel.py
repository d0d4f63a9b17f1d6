"""A bench's runs side by side: at most --parallel at once, leave-one-out phases in order, failures stop the rest."""

import threading
import time
from types import SimpleNamespace

import pytest

from kernelfoundry.bench_parallel import default_parallel, phases, run_all


def plan_of(kinds):
    return [SimpleNamespace(name=f"r{i}", loo_source="m.sqlite" if k == "loo" else None) for i, k in enumerate(kinds)]


def test_runs_go_side_by_side_up_to_parallel_and_phases_wait_for_each_other():
    plan = plan_of(["cold"] * 5 + ["loo"] * 3 + ["cold"] * 2)
    assert phases(plan) == [[0, 1, 2, 3, 4], [5, 6, 7], [8, 9]]
    lock, running, peak, spans = threading.Lock(), [0], [0], {}

    def do_run(i, run, stop):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        start = time.monotonic()
        time.sleep(0.15)
        with lock:
            running[0] -= 1
        spans[i] = (start, time.monotonic())
        return run.name

    assert run_all(plan, do_run, parallel=3) == {i: f"r{i}" for i in range(10)}
    assert peak[0] == 3
    for earlier, later in ((range(0, 5), range(5, 8)), (range(5, 8), range(8, 10))):
        assert max(spans[i][1] for i in earlier) <= min(spans[j][0] for j in later)


def test_a_failing_run_stops_the_others_and_is_raised():
    stopped = []

    def do_run(i, run, stop):
        if i == 0:
            raise RuntimeError("boom")
        stop.wait(5)
        stopped.append(stop.is_set())
        if stop.is_set():
            raise KeyboardInterrupt
        return i

    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="boom"):
        run_all(plan_of(["cold"] * 4), do_run, parallel=2)
    assert stopped == [True] and time.monotonic() - t0 < 4      # run 1 was stopped; 2 and 3 never started


def test_default_parallel_fills_the_cluster():
    assert default_parallel(4, 48.0) == 12 and default_parallel(16, 8.0) == 1 and default_parallel(0, 3.0) == 3
