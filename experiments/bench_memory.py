"""Memory benchmark: what the experience memory costs the driver, and how large it grows.

    python experiments/bench_memory.py [--smoke]

1. Driver overhead: the real driver over 300 candidates (in-process instant workers, a run
   store pre-filled with 1k candidates), without memory and with a memory already holding
   10k and 100k experiences; the difference is what the memory adds per candidate.
   Target <= 1 ms.
2. Size: the memory file after 10k and 100k experiences whose diffs are real built-in
   mutator edits of the suite's seed kernels.  Target < 100 MB at 100k.
3. Reads: the priors and the prompt retrieval a run does at its start, on that file.
"""

from __future__ import annotations

import argparse
import difflib
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "experiments"))

from bench_engine import SPEC, TASK, InlinePool, prefill  # noqa: E402

from kernelfoundry.memory import DRAFT, REFINE, ExperienceStore, RunMemory, TaskSignature, signature_of  # noqa: E402
from kernelfoundry.search import KernelArchive, ProgressLine, SearchDriver, SearchSettings  # noqa: E402
from kernelfoundry.store import RunStore  # noqa: E402
from kernelfoundry.task import load_task  # noqa: E402

OP_KINDS = ("softmax", "norm", "matmul", "elementwise", "reduction", "scan", "loss", "gemm+epilogue")


def real_edits(n_chains: int = 6, length: int = 8) -> list[tuple[str, str, str]]:
    """(action, description, diff) of built-in mutator edits chained from every suite seed."""
    from kernelfoundry.mutate import BuiltinMutator, MutationRequest, ParentView
    out = []
    for path in sorted((REPO / "experiments" / "tasks").glob("*.yaml")):
        task = load_task(path)
        seed = task.seed_sources()[0][1]
        for chain in range(n_chains):
            source = seed
            for step in range(length):
                p = BuiltinMutator(seed=chain).propose(MutationRequest(task=task, parent=ParentView(0, source),
                                                                       seed=step))
                if p.source is None:
                    break
                diff = "".join(difflib.unified_diff(source.splitlines(True), p.source.splitlines(True),
                                                    "parent", "child", n=2))
                out.append((p.mutator, p.description, diff))
                source = p.source
    return out


def fill_memory(path: Path, n: int, edits, rng: random.Random) -> float:
    """*n* experiences over 40 task signatures; returns seconds per experience."""
    sigs = [TaskSignature(f"task{i}", OP_KINDS[i % len(OP_KINDS)], 1 + i % 3, "float32", f"r{i % 5}xl{i % 4}",
                          "h100") for i in range(40)]
    t0 = time.perf_counter()
    with ExperienceStore(path) as store:
        for i in range(n):
            action, description, diff = edits[rng.randrange(len(edits))]
            passed = rng.random() < 0.8
            stage = REFINE if rng.random() < 0.85 else DRAFT
            reward = (rng.gauss(0.02, 0.1) if passed else -0.1) if stage == REFINE else float(passed)
            store.add_experience(sigs[i % len(sigs)], {
                "run": f"run{i // 100}", "stage": stage, "action": action, "request_kind": "mutate",
                "parent_id": i, "parent_cell": [i % 12, i % 6], "parent_objective": 1.0, "parent_passed": True,
                "candidate_id": i + 1, "gate": None if passed else "correctness", "passed": passed,
                "objective": 1.0 + reward if passed else None, "gain": reward if passed else None,
                "reward": reward, "description": description, "diff": diff}, [action])
    return (time.perf_counter() - t0) / max(n, 1)


def driver_ms(memory_path: Path | None, prefilled: int, extra: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "run.sqlite")
        prefill(store, prefilled)
        task = load_task(TASK)
        pool = InlinePool(4)
        memory = None
        if memory_path is not None:
            memory = RunMemory(ExperienceStore(memory_path), signature_of(task, ["h100"]), tmp,
                               builtin_operators=_builtin_ops(), log=lambda m: None)
        driver = SearchDriver(task=task, settings=SearchSettings(budget=prefilled + extra, workers=4, seed=0,
                                                                 hardware=["h100"]),
                              store=store, run_dir=Path(tmp), pool=pool, memory=memory,
                              progress=ProgressLine(prefilled + extra, quiet=True), archive=KernelArchive(SPEC))
        t0 = time.perf_counter()
        driver.run([])
        wall = time.perf_counter() - t0
        spent = sum(w.spent for w in pool.workers)
        store.close()
        if memory is not None:
            memory.close()
    return (wall - spent) / extra * 1e3


def _builtin_ops():
    from kernelfoundry.mutate import OPERATORS
    return {op.name: (op.kind, float(op.weight)) for op in OPERATORS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a tiny run of every part (for tests)")
    args = parser.parse_args()
    sizes = (500, 1000) if args.smoke else (10_000, 100_000)
    extra, prefilled = (30, 100) if args.smoke else (300, 1000)
    rng = random.Random(0)
    edits = real_edits(1, 3) if args.smoke else real_edits()
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        print(f"memory size ({len(edits)} distinct real built-in edits as diffs)")
        print(f"{'experiences':>12} {'MB':>8} {'bytes/exp':>10} {'write ms/exp':>13}")
        for n in sizes:
            path = Path(tmp) / f"m{n}.sqlite"
            per = fill_memory(path, n, edits, rng)
            size = path.stat().st_size + sum(p.stat().st_size for p in Path(tmp).glob(f"m{n}.sqlite-*"))
            files[n] = path
            print(f"{n:>12} {size / 1e6:>8.2f} {size / n:>10.0f} {per * 1e3:>13.3f}")
        print("\nreads at a run's start (40 signatures)")
        print(f"{'experiences':>12} {'priors ms':>10} {'retrieval ms':>13}")
        sig = TaskSignature("task0", "softmax", 1, "float32", "r0xl0", "h100")
        for n, path in files.items():
            with ExperienceStore(path) as store:
                t0 = time.perf_counter()
                store.priors(sig, REFINE)
                t1 = time.perf_counter()
                store.top_experiences(sig, REFINE, 3)
                t2 = time.perf_counter()
            print(f"{n:>12} {(t1 - t0) * 1e3:>10.1f} {(t2 - t1) * 1e3:>13.1f}")
        print(f"\ndriver overhead per candidate ({prefilled} stored candidates, {extra} more, instant workers)")
        print(f"{'memory':>16} {'ms / candidate':>15} {'added ms':>9}")
        base = min(driver_ms(None, prefilled, extra) for _ in range(2))
        print(f"{'none':>16} {base:>15.3f} {'-':>9}")
        for n, path in files.items():
            ms = min(driver_ms(path, prefilled, extra) for _ in range(2))
            print(f"{f'{n} experiences':>16} {ms:>15.3f} {ms - base:>9.3f}")


if __name__ == "__main__":
    main()
