"""Running a bench's runs several at a time (one driver thread each; their workers spread over the cluster).

A run's driver spends its time waiting on Ray, so one process drives many runs; the runs'
workers are Ray actors placed with the ``SPREAD`` strategy, so a bench with more runs at once
than one machine holds uses every node of the cluster.  Runs that read what earlier runs
wrote (the leave-one-out memory runs) start only after those runs have ended: the plan is cut
into phases, each run concurrently.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Sequence


def default_parallel(workers_per_run: int, cluster_cpus: float) -> int:
    """How many runs fit at once: the cluster's CPUs over each run's workers (at least one)."""
    return max(1, int(cluster_cpus // max(1, workers_per_run)))


def workers_per_run(workers: int) -> int:
    """``--workers 0`` for a bench: one per CPU of the driver machine, as a single run would use locally."""
    return workers or max(1, os.cpu_count() or 1)


def phases(plan: Sequence[Any]) -> list[list[int]]:
    """Indices of *plan* cut where runs start or stop depending on earlier runs (``loo_source``)."""
    out: list[list[int]] = []
    last = None
    for i, run in enumerate(plan):
        key = getattr(run, "loo_source", None) is not None
        if not out or key != last:
            out.append([])
        out[-1].append(i)
        last = key
    return out


def run_all(plan: Sequence[Any], do_run: Callable[[int, Any, threading.Event], Any], *,
            parallel: int) -> dict[int, Any]:
    """Call ``do_run(index, run, stop)`` for every run, *parallel* at a time, phase after phase.

    Returns {index: result}.  Ctrl-C sets ``stop`` (each run's driver then stops as if
    interrupted, its candidates stored) and is re-raised once every running run has ended; an
    exception from a run stops the others the same way and is re-raised.
    """
    stop = threading.Event()
    results: dict[int, Any] = {}
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="bench-run") as pool:
        for phase in phases(plan):
            if stop.is_set():
                break
            pending: dict[Future, int] = {}
            queue = list(phase)
            while queue or pending:
                while queue and len(pending) < parallel and not stop.is_set():
                    i = queue.pop(0)
                    pending[pool.submit(do_run, i, plan[i], stop)] = i
                if not pending:
                    break
                try:
                    done, _ = wait(list(pending), timeout=1.0, return_when=FIRST_COMPLETED)
                except KeyboardInterrupt as exc:
                    stop.set()
                    failure = failure or exc
                    continue
                for fut in done:
                    i = pending.pop(fut)
                    try:
                        results[i] = fut.result()
                    except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others stop
                        stop.set()
                        failure = failure or exc
    if failure is not None:
        raise failure
    return results
