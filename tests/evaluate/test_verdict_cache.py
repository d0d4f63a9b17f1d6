"""The bench's shared verdict cache: keys, what is stored, and a real worker reading it back."""

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

from kernelfoundry import REPO_DIR
from kernelfoundry.candidate import source_hash, verify_seed
from kernelfoundry.evaluate import VerifyOptions
from kernelfoundry.evaluate.verdict_cache import VerdictCache, cacheable, context_key
from kernelfoundry.search.workers import KernelWorker
from kernelfoundry.task import load_task

PASSED = {"passed": True, "gate": None, "reason": "", "gates": [], "objective": 1.5}


def _failed(gate, reason):
    return {"passed": False, "gate": gate, "reason": reason,
            "gates": [{"name": gate, "passed": False, "reason": reason}]}


def test_verify_seed_and_hash_ignore_trailing_whitespace_only():
    a, b, c = "x = 1\ny = 2\n", "x = 1   \ny = 2\n\n", "x = 1\ny = 3\n"
    assert source_hash(a) == source_hash(b) and verify_seed(a) == verify_seed(b)
    assert source_hash(a) != source_hash(c) and verify_seed(a) != verify_seed(c)
    assert 0 <= verify_seed(a) < 2**32


def test_round_trip_and_context_separation(tmp_path):
    path = tmp_path / "v.sqlite"
    ctx = context_key({"name": "relu"}, ["h100"], {"max_kernel_configs": 8})
    assert ctx != context_key({"name": "relu"}, ["h100"], {"max_kernel_configs": 8, "tune": False})
    assert ctx != context_key({"name": "relu"}, ["a100"], {"max_kernel_configs": 8})
    cache = VerdictCache(path, ctx)
    assert cache.get("src") is None
    assert cache.put("src", PASSED) and cache.get("src   \n") == PASSED
    other = VerdictCache(path, context_key({"name": "gelu"}, ["h100"], {"max_kernel_configs": 8}))
    assert other.get("src") is None and len(other) == 1
    cache.close()
    other.close()


def test_only_verdicts_that_follow_from_the_source_are_stored(tmp_path):
    assert cacheable(PASSED)
    assert cacheable(_failed("correctness", "output 'y' differs at [3, 1]: got 2.0, expected 1.0"))
    assert cacheable(_failed("hack", "the source imports 'os'"))
    assert not cacheable(_failed("correctness", "launch did not finish within 30 s"))
    assert not cacheable(_failed("trace", "the candidate's process was killed: wall limit 120 s"))
    assert not cacheable(_failed("sandbox", "the sandbox could not start"))
    assert not cacheable(_failed("worker", "worker died during verify"))
    cache = VerdictCache(tmp_path / "v.sqlite", "ctx")
    assert not cache.put("slow", _failed("correctness", "launch did not finish within 30 s"))
    assert cache.get("slow") is None and len(cache) == 0


def test_a_second_worker_reads_the_first_workers_verdict(tmp_path):
    task = load_task(REPO_DIR / "experiments/tasks/relu.yaml")
    source = (REPO_DIR / "experiments/tasks/kernels/relu_naive.py").read_text()
    path = str(tmp_path / "verdicts.sqlite")
    first = KernelWorker(task.to_dict(), ["h100"], {"type": "builtin"}, VerifyOptions(max_kernel_configs=2),
                         verdict_cache=path)
    fresh = first.verify(source)
    assert fresh["passed"] and "cached" not in fresh
    second = KernelWorker(task.to_dict(), ["h100"], {"type": "builtin"}, VerifyOptions(max_kernel_configs=2),
                          worker_index=1, verdict_cache=path)
    hit = second.verify(source)
    assert hit["cached"] is True and hit["objective"] == fresh["objective"]
    assert hit["descriptors"] == fresh["descriptors"] and hit["wall_seconds"] < fresh["wall_seconds"]
    # different verifier options are a different context: verified afresh, same objective (seed from source)
    other = KernelWorker(task.to_dict(), ["h100"], {"type": "builtin"}, VerifyOptions(max_kernel_configs=1),
                         verdict_cache=path)
    again = other.verify(source)
    assert "cached" not in again and again["passed"]


def _open_and_put(path: str, i: int) -> int:
    cache = VerdictCache(path, "ctx")
    cache.put(f"src{i}", {"passed": True, "gate": "model"})
    cache.close()
    return i


def test_workers_opening_one_new_cache_together_do_not_fail(tmp_path):
    """Switching a new file to WAL takes an exclusive lock; concurrent openers retry."""
    import multiprocessing as mp
    path = str(tmp_path / "shared.sqlite")
    with mp.get_context("spawn").Pool(8) as pool:
        for round_ in range(3):
            target = f"{path}.{round_}"
            assert sorted(pool.starmap(_open_and_put, [(target, i) for i in range(16)])) == list(range(16))
            assert len(VerdictCache(target, "ctx")) == 16
