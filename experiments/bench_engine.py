"""Engine benchmark: the driver's own overhead per candidate, and how many jobs in flight it keeps busy.

    python experiments/bench_engine.py [--quick | --smoke]

1. Overhead: a store pre-filled with 10k / 100k candidates, then 300 more candidates driven
   through the real driver with workers that answer instantly in-process; driver time = wall
   time of the steady-state loop minus time spent inside the workers.  Target <= 1 ms.
2. In flight: K = 64 ... 4096 simulated workers whose proposals take 10 s (standing in for LLM
   latency; in-process fakes that answer when their time is up), three rounds each:
   efficiency = ideal wall time / measured.  Target >= 0.9 at 1024 in flight.
3. Parallel efficiency at 1, 2, 4, 8 real Ray workers whose proposals sleep 1 s.
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import json
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelfoundry.search import (ArchiveSpec, InFlight, KernelArchive, ProgressLine, SearchDriver,  # noqa: E402
                                  SearchSettings)
from kernelfoundry.store import RunStore  # noqa: E402
from kernelfoundry.task import load_task  # noqa: E402

TASK = REPO / "experiments" / "tasks" / "softmax.yaml"
SPEC = ArchiveSpec(names=("tiling", "memory_pattern"), ranges=((0.0, 24.0), (0.0, 6.0)), bins=(12, 6),
                   labels={"tiling": [str(i) for i in range(12)], "memory_pattern": [str(i) for i in range(6)]})
SOURCE = (REPO / "experiments" / "tasks" / "kernels" / "softmax_naive.py").read_text()


class SyntheticWorker:
    """Proposes a unique edit of the parent; verdicts are derived from the source hash."""

    def __init__(self, task, hardware, mutator, verify_options, worker_index=0, sleep_s=0.0):
        self.hardware, self.sleep_s, self.index = hardware, sleep_s, worker_index
        self.spent = 0.0

    def ping(self):
        return f"synthetic{self.index}"

    def propose(self, job):
        t0 = time.perf_counter()
        if self.sleep_s:
            time.sleep(self.sleep_s)
        src = job["source"] if job["kind"] == "seed" else job["parent"]["source"][:4000] + f"\n# edit {job['seed']}"
        out = {"source": src, "mutator": "seed" if job["kind"] == "seed" else "synthetic", "description": "",
               "parent_ids": [] if job["kind"] == "seed" else [job["parent"]["id"]], "prompt_id": None,
               "error": None, "hash": hashlib.sha256(src.encode()).hexdigest()[:32],
               "usage": {"calls": 0}, "llm_log": [], "worker": self.ping()}
        self.spent += time.perf_counter() - t0
        return out

    def verify(self, source):
        t0 = time.perf_counter()
        out = synthetic_verdict(source, self.hardware)
        self.spent += time.perf_counter() - t0
        return out


def synthetic_verdict(source: str, hardware) -> dict:
    h = int(hashlib.sha256(source.encode()).hexdigest(), 16)
    objective = 0.5 + (h % 1000) / 400.0
    return {"passed": h % 7 != 0, "gate": None if h % 7 else "correctness", "reason": "",
            "gates": [{"name": "hack", "passed": True, "reason": ""}],
            "descriptors": {"tiling": (h % 1200) / 50.0, "memory_pattern": (h // 1200) % 6 + 0.5},
            "objective": objective,
            "hardware": {hw: {"latency_s": 1e-3 / objective, "sol_fraction": 0.4, "baseline_s": 1e-3,
                              "best_params": {"BLOCK_N": 1024, "num_warps": 4}} for hw in hardware},
            "param_space": {"BLOCK_N": [256, 512, 1024]}, "seconds": 0.0}


class InlinePool:
    """The WorkerPool interface, calling workers synchronously in this process."""

    def __init__(self, n: int, workers: list | None = None):
        """*n* synthetic workers, or the *workers* given (anything with ``propose`` and ``verify``)."""
        self.workers = workers or [SyntheticWorker(None, ["h100"], None, None, i) for i in range(n)]
        self.futures: dict[int, tuple[InFlight, tuple]] = {}
        self.replaced = 0
        self._next = 0

    def idle_workers(self):
        busy = {f.worker for f, _ in self.futures.values()}
        return [i for i in range(len(self.workers)) if i not in busy]

    def submit(self, worker, stage, flight, *args):
        flight.stage, flight.worker = stage, worker
        self._next += 1
        self.futures[self._next] = (flight, args)

    def wait(self, timeout_s):
        out = []
        for key in list(self.futures):
            flight, args = self.futures.pop(key)
            out.append((flight, getattr(self.workers[flight.worker], flight.stage)(*args), None))
        return out

    def shutdown(self):
        self.futures.clear()


class TimedPool(InlinePool):
    """K simulated workers: a proposal answers *latency_s* after it was submitted, a verify at once.

    Nothing sleeps but ``wait`` (as ``ray.wait`` would), so the driver's own time is what limits it.
    """

    def __init__(self, n: int, latency_s: float):
        super().__init__(n)
        self.latency_s = latency_s
        self.due: list[tuple[float, int]] = []           # (ready at, key), a heap

    def submit(self, worker, stage, flight, *args):
        super().submit(worker, stage, flight, *args)
        heapq.heappush(self.due, (time.perf_counter() + (self.latency_s if stage == "propose" else 0.0), self._next))

    def wait(self, timeout_s):
        if not self.due:
            return []
        delay = self.due[0][0] - time.perf_counter()
        if delay > 0:
            time.sleep(min(delay, timeout_s))
        out, now = [], time.perf_counter()
        while self.due and self.due[0][0] <= now:
            _, key = heapq.heappop(self.due)
            flight, args = self.futures.pop(key)
            out.append((flight, getattr(self.workers[flight.worker], flight.stage)(*args), None))
        return out


def inflight_efficiency(k: int, rounds: int, latency_s: float) -> tuple[float, float, int, float]:
    """(efficiency, wall s, candidates, driver ms per candidate) with *k* jobs of *latency_s* in flight."""
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "run.sqlite")
        budget = 1 + k * rounds
        pool = TimedPool(k, latency_s)
        driver = SearchDriver(task=load_task(TASK), settings=SearchSettings(budget=budget, workers=k, seed=0,
                                                                           hardware=["h100"]),
                              store=store, run_dir=Path(tmp), pool=pool, progress=ProgressLine(budget, quiet=True),
                              archive=KernelArchive(SPEC))
        driver._evaluate_seeds([("seed", SOURCE)])
        driver.write_summary()
        t0, cpu0 = time.perf_counter(), time.process_time()
        driver._steady_state()
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        n = store.candidate_count() - 1
        store.close()
    return rounds * latency_s / wall, wall, n, cpu / n * 1e3


def prefill(store: RunStore, n: int) -> None:
    rng = random.Random(0)
    store.conn.execute("BEGIN")
    for i in range(n):
        src = SOURCE + f"\n# prefill {i}"
        v = synthetic_verdict(src, ["h100"])
        store.conn.execute(
            "INSERT INTO candidates(id, created_at, parent_ids, mutator, kind, description, source, passed, gate,"
            " reason, gates, descriptors, objective, hardware, archive_status, llm_calls, prompt_tokens,"
            " completion_tokens, cost_usd, seconds, verify_seconds) VALUES (?, ?, ?, ?, ?, '', ?, ?, ?, '', '[]',"
            " ?, ?, ?, 0, 0, 0, 0, 0, 0, 0)",
            (i, time.time(), "[]" if i == 0 else f"[{rng.randrange(i)}]", "seed" if i == 0 else "synthetic",
             "seed" if i == 0 else "mutate", src, int(v["passed"] or i == 0), v["gate"] if i else None,
             json.dumps(v["descriptors"]), v["objective"], json.dumps(v["hardware"])))
    store.conn.execute("COMMIT")


def driver_overhead(prefilled: int, extra: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "run.sqlite")
        prefill(store, prefilled)
        task = load_task(TASK)
        pool = InlinePool(4)
        t0 = time.perf_counter()
        driver = SearchDriver(task=task, settings=SearchSettings(budget=prefilled + extra, workers=4, seed=0,
                                                                 hardware=["h100"]),
                              store=store, run_dir=Path(tmp), pool=pool,
                              progress=ProgressLine(prefilled + extra, quiet=True), archive=KernelArchive(SPEC))
        driver.write_summary()          # its first call imports the fidelity tables: a fixed cost per run
        rebuild = time.perf_counter() - t0
        t0, cpu0 = time.perf_counter(), time.process_time()
        driver._steady_state()          # the loop itself; the final summary is a fixed cost per run
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        spent = sum(w.spent for w in pool.workers)
        assert store.candidate_count() == prefilled + extra
        store.close()
    return (wall - spent) / extra * 1e3, max(0.0, cpu - spent) / extra * 1e3, rebuild


def parallel_efficiency(workers: int, per_worker: int) -> tuple[float, float, int]:
    from kernelfoundry.search import WorkerPool
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "run.sqlite")
        task = load_task(TASK)
        budget = 1 + workers * per_worker
        pool = WorkerPool(workers, SyntheticWorker, {"task": task.to_dict(), "hardware": ["h100"], "mutator": {},
                                                     "verify_options": {}, "sleep_s": 1.0}, num_cpus=0.1)
        pool.ready()
        driver = SearchDriver(task=task, settings=SearchSettings(budget=budget, workers=workers, seed=0,
                                                                 hardware=["h100"]),
                              store=store, run_dir=Path(tmp), pool=pool, progress=ProgressLine(budget, quiet=True),
                              archive=KernelArchive(SPEC))
        t0 = time.perf_counter()
        driver.run([("seed", SOURCE)])
        wall = time.perf_counter() - t0
        pool.shutdown()
        n = store.candidate_count()
        store.close()
    ideal = 1.0 + (n - 1) / workers     # the seed alone, then every worker busy with 1-s proposals
    return ideal / wall, wall, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer candidates")
    parser.add_argument("--smoke", action="store_true", help="a tiny run of both parts (for tests)")
    args = parser.parse_args()
    print("driver overhead per candidate (in-process instant workers)")
    print(f"{'stored candidates':>18} {'ms / candidate':>15} {'CPU ms / cand':>14} {'set-up s':>10}")
    sizes = [200] if args.smoke else [10000] if args.quick else [10000, 100000]
    for n in sizes:
        ms, cpu_ms, rebuild = driver_overhead(n, 30 if args.smoke else 100 if args.quick else 300)
        print(f"{n:>18} {ms:>15.2f} {cpu_ms:>14.2f} {rebuild:>10.2f}")
    latency = 0.5 if args.smoke else 10.0
    print(f"\njobs in flight (simulated workers, proposals take {latency:g} s, in-process)")
    print(f"{'in flight':>10} {'candidates':>11} {'wall s':>8} {'per s':>8} {'driver ms/cand':>15} {'efficiency':>11}")
    best = None
    for k in ((16, 64) if args.smoke else (64, 256, 1024) if args.quick else (64, 256, 1024, 2048, 4096)):
        eff, wall, n, ms = inflight_efficiency(k, 2 if args.smoke else 3, latency)
        best = k if eff >= 0.9 else best
        print(f"{k:>10} {n:>11} {wall:>8.2f} {n / wall:>8.1f} {ms:>15.2f} {eff:>11.3f}")
    print(f"largest in-flight count measured with efficiency >= 0.9: {best if best is not None else 'none'}")
    import ray
    ray.init(address="local", num_cpus=8, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    print("\nparallel efficiency (Ray workers, proposals sleep 1 s)")
    print(f"{'workers':>8} {'candidates':>11} {'wall s':>8} {'efficiency':>11}")
    for k in ((1, 2) if args.smoke else (1, 2, 4, 8)):
        eff, wall, n = parallel_efficiency(k, 1 if args.smoke else 3 if args.quick else 6)
        print(f"{k:>8} {n:>11} {wall:>8.2f} {eff:>11.3f}")
    ray.shutdown()


if __name__ == "__main__":
    main()
