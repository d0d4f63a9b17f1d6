"""Dense traces of the configs the model picks, with the runner-up traced ahead on an idle CPU.

Provisional (sparse) traces rank a candidate's configs; each config the model picks is then traced
densely and the model picks again (docs/verifier.md, "Lazy dense traces").  When a dense trace
moves the pick, the next round traces the new pick, one job after another, while the second CPU
waits.  So each round also starts, in a second job beside the pick's, the dense trace of the
runner-up (the best-ranked provisional config that is not a pick).  Its result is kept aside and
used only if a later round picks that config; until then the model never sees it, so verdicts and
objectives are the same as without it, only sooner when the pick moves to the runner-up.  A trace
ahead that no round asks for is cancelled when the verify ends.  A config's dense trace does not
depend on the job it runs in (each config's trace is seeded by its own key), and the trace ahead
runs only when two of the child's fork servers wait idle (a job that starts its own server pays
seconds of imports).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from ..candidate import config_key
from ..records import ConfigTrace, GateResult
from ..sandbox import SandboxIsolationError

#: run_job(configs, cancel) -> the sandbox outcome of one dense trace job over *configs*.
RunJob = Callable[[list[dict[str, Any]], "threading.Event | None"], Any]
#: judge(outcome, configs) -> (the trace gate, the dense traces) of a finished job.
JudgeJob = Callable[[Any, list[dict[str, Any]]], tuple[GateResult, list[ConfigTrace]]]


class DenseRounds:
    """``dense(todo, ahead)``: the trace gate and dense traces of the *todo* configs; *ahead*, when
    given, is traced beside them for a later round.  ``close()`` cancels what no round used."""

    def __init__(self, run_job: RunJob, judge: JudgeJob, side_by_side: Callable[[], int]):
        self._run_job, self._judge, self._side_by_side = run_job, judge, side_by_side
        self._ahead: dict[str, Future] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._cancel = threading.Event()

    def __call__(self, todo: list[dict[str, Any]], ahead: dict[str, Any] | None = None
                 ) -> tuple[GateResult, list[ConfigTrace]]:
        keys = [config_key(c) for c in todo]
        if ahead is not None and config_key(ahead) not in self._ahead and config_key(ahead) not in keys \
                and self._side_by_side() >= 2:
            self._pool = self._pool or ThreadPoolExecutor(max_workers=1)
            self._ahead[config_key(ahead)] = self._pool.submit(self._run_job, [ahead], self._cancel)
        fresh = [c for c, k in zip(todo, keys) if k not in self._ahead]
        first = keys.index(config_key(fresh[0])) if fresh else len(keys)
        results = [(first, *self._judge(self._run_job(fresh, None), fresh))] if fresh else []
        for at, (config, key) in enumerate(zip(todo, keys)):
            if key in self._ahead:
                results.append((at, *self._judge(self._ahead.pop(key).result(), [config])))
        results = [(gate, traces) for _, gate, traces in sorted(results, key=lambda r: r[0])]
        # as one job over *todo* would: the failure of the first failing config in todo's order
        failed = next((gate for gate, _ in results if not gate.passed), None)
        if failed is not None:
            return failed, []
        return results[0][0], [t for _, traces in results for t in traces]

    def close(self) -> None:
        """Cancel the traces ahead that no round asked for and wait for their jobs to end."""
        self._cancel.set()
        for job in self._ahead.values():
            try:
                job.result()
            except SandboxIsolationError:
                raise
            except Exception:  # noqa: BLE001 - a cancelled job's outcome decides nothing
                pass
        self._ahead.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def runner_up(ranked: dict[str, list[dict[str, Any]]], hardware: list[str], provisional: set[str],
              todo: list[dict[str, Any]], hint_params: frozenset[str] | set[str]) -> dict[str, Any] | None:
    """The best-ranked provisional kernel config (hints left out) on the first hardware that is not in
    *todo*, or None."""
    taken = {config_key(c) for c in todo}
    for params in ranked.get(hardware[0], []) if hardware else []:
        kernel = {k: v for k, v in params.items() if k not in hint_params}
        key = config_key(kernel)
        if key in provisional and key not in taken:
            return kernel
    return None
