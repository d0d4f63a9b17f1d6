"""The per-config trace cache: a PARAMS-only sibling is traced only for its new configs, with the
verdict it gets when traced in full."""

from __future__ import annotations

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.candidate import code_text, verify_seed
from kernelfoundry.evaluate.pipeline import verify
from kernelfoundry.evaluate.trace.cache import TraceCache
from kernelfoundry.task import load_task

RELU = REPO_DIR / "experiments/tasks/relu.yaml"
SEED = (REPO_DIR / "experiments/tasks/kernels/relu_naive.py").read_text()
PARAMS = 'PARAMS = {"BLOCK": [256, 512], "num_warps": [4], "num_stages": [1]}'
SIBLING = SEED.replace(PARAMS, 'PARAMS = {"BLOCK": [512, 1024], "num_warps": [4], "num_stages": [1]}')


def test_code_text_blanks_params_keeps_lines_and_refuses_code_that_can_read_them():
    assert SIBLING != SEED and code_text(SIBLING) == code_text(SEED)
    assert verify_seed(SIBLING) == verify_seed(SEED)
    # separators some reader breaks lines at and Python does not: such a source is never cached (the
    # hack gate refuses it); a text cut by str.splitlines had landed on kernel code
    for sep in ("\x1c", "\x0c", "\u2028", "\x85"):
        assert code_text('# layout' + sep * 4 + '\n' + SEED) is None, repr(sep)
    # text the tree does not hold (comments, escapes) is in the key too: Triton reads kernels as text
    assert code_text(SEED.replace("import torch", "import torch  # note")) != code_text(SEED)
    doc = '    """\n    {} relu_kernel(x)\n    """\n'
    kernel_def = "def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):\n"
    escaped, plain = (SEED.replace(kernel_def, kernel_def + doc.format(d)) for d in ("\\x64ef", "def"))
    assert code_text(escaped) != code_text(plain)
    shifted = SEED.replace(PARAMS, 'PARAMS = {"BLOCK": [256,\r 512], "num_warps": [4], "num_stages": [1]}')
    assert code_text(shifted) is None
    wrapped = SEED.replace(PARAMS, 'PARAMS = {"BLOCK": [256,\n  512], "num_warps": [4], "num_stages": [1]}')
    assert code_text(wrapped) != code_text(SEED), "a line shifted: the trace's branch arms would not match"
    reads = SEED.replace("    n = x.numel()", "    n = x.numel() if PARAMS['BLOCK'][0] else 0")
    assert code_text(reads) is None and verify_seed(reads) != verify_seed(reads.replace("256, 512", "512"))
    for trick in ("    n = getattr(x, 'numel')()", "    n = x.numel() + len('PARAMS') * 0",
                  "    n = x.numel()\n    PARAMS = {}"):
        assert code_text(SEED.replace("    n = x.numel()", trick)) is None, trick
    assert code_text(SEED.replace(PARAMS, PARAMS + "\nPARAMS = " + PARAMS[9:])) is None
    assert code_text('"""PARAMS are the block sizes."""\n' + SEED) is not None      # a docstring is fine


@pytest.fixture(scope="module")
def relu():
    return load_task(RELU)


def test_configs_that_read_alike_are_different_keys_and_params_may_not_hold_them():
    from kernelfoundry.candidate import ParamSpaceError, validate_param_space
    assert TraceCache.key("c", {"BLOCK": 1024}) != TraceCache.key("c", {"BLOCK": "1024"})
    assert TraceCache.key("c", {"A": "1,B=2"}) != TraceCache.key("c", {"A": 1, "B": 2})
    for bad in ({"BLOCK": [1024, "1024"]}, {"MODE": ["a,b"]}, {"MODE": ["k=v"]}):
        with pytest.raises(ParamSpaceError):
            validate_param_space(bad)


def test_a_params_only_sibling_traces_only_its_new_configs_and_gets_the_same_verdict(relu, tmp_path):
    cache = TraceCache(tmp_path / "traces.sqlite")
    first = verify(relu, SEED, ["h100"], seed=verify_seed(SEED), trace_cache=cache, compile=False)
    assert first.passed and first.gates[-1].name != "trace"
    trace_gate = next(g for g in first.gates if g.name == "trace")
    assert trace_gate.details["cached_configs"] == 0 and cache.hits == 0
    cached = verify(relu, SIBLING, ["h100"], seed=verify_seed(SIBLING), trace_cache=cache, compile=False)
    fresh = verify(relu, SIBLING, ["h100"], seed=verify_seed(SIBLING), compile=False)
    gate = next(g for g in cached.gates if g.name == "trace")
    assert gate.details["cached_configs"] == 1 and gate.details["traces"] == len(relu.target_shapes)
    assert cached.passed and fresh.passed
    assert cached.objective == fresh.objective and cached.descriptors == fresh.descriptors
    assert {k: v.to_dict() for k, v in cached.hardware.items()} == {k: v.to_dict() for k, v in fresh.hardware.items()}
    strip = [{k: v for k, v in t.to_dict().items() if k != "seconds"} for t in cached.traces]
    assert strip == [{k: v for k, v in t.to_dict().items() if k != "seconds"} for t in fresh.traces]
    # a new worker on the same file: every config of the sibling is read back, no trace job runs
    again = verify(relu, SIBLING, ["h100"], seed=verify_seed(SIBLING), trace_cache=TraceCache(tmp_path / "traces.sqlite"),
                   compile=False)
    gate = next(g for g in again.gates if g.name == "trace")
    assert gate.details["cached_configs"] == 2 and gate.seconds == 0.0 and again.objective == fresh.objective


def test_a_failed_trace_is_not_cached(relu, tmp_path):
    endless = SEED.replace("    mask = offs < n_elements\n",
                           "    mask = offs < n_elements\n    while BLOCK > 300:\n        mask = mask & (offs >= 0)\n")
    cache = TraceCache(None)
    result = verify(relu, endless, ["h100"], seed=0, trace_cache=cache, compile=False)
    assert not result.passed
    assert not cache.memory


def test_the_trace_poisons_small_scratch_so_a_config_cannot_see_the_one_before():
    """A 12 KB scratch freed by one config came back to the next with a marker intact."""
    import torch
    from kernelfoundry.evaluate.child.record_trace import POISON_MAX_BYTES
    from kernelfoundry.harness.guard import DispatchGuard
    with DispatchGuard(poison_empty=True, poison_max_bytes=POISON_MAX_BYTES):
        small, big = torch.empty(3000, dtype=torch.int32), torch.empty(POISON_MAX_BYTES // 4 + 1)
    assert (small == torch.iinfo(torch.int32).max).all()
    assert not torch.isnan(big[:1024]).any()            # left as mapped: gigabytes would be committed


def test_a_dense_trace_replaces_a_provisional_one_and_never_the_reverse(tmp_path):
    path = tmp_path / "traces.sqlite"
    cache = TraceCache(path)
    config = {"BLOCK": 256}
    cache.put("ctx", config, [{"shape_index": 0, "provisional": True}])
    cache.put("ctx", config, [{"shape_index": 0, "provisional": False}])
    cache.put("ctx", config, [{"shape_index": 0, "provisional": True}])
    assert cache.get("ctx", config) == [{"shape_index": 0, "provisional": False}]
    cache.close()
    reopened = TraceCache(path)
    assert reopened.get("ctx", config) == [{"shape_index": 0, "provisional": False}]


def test_a_params_only_sibling_runs_only_its_new_configs_checks(relu, tmp_path):
    """A hint added keeps every planned check run (cached); a block size appended runs the new config's."""
    cache = TraceCache(tmp_path / "traces.sqlite")
    first = verify(relu, SEED, ["h100"], seed=verify_seed(SEED), trace_cache=cache, compile=False)
    gate = next(g for g in first.gates if g.name == "correctness")
    assert first.passed and gate.details["cached_runs"] == 0
    hinted = SEED.replace(PARAMS, 'PARAMS = {"BLOCK": [256, 512], "num_warps": [4, 8], "num_stages": [1]}')
    again = verify(relu, hinted, ["h100"], seed=verify_seed(hinted), trace_cache=cache, compile=False)
    fresh = verify(relu, hinted, ["h100"], seed=verify_seed(hinted), compile=False)
    gate = next(g for g in again.gates if g.name == "correctness")
    assert gate.details["cached_runs"] == gate_runs(first) and gate.details["runs"] == 0
    assert again.passed and fresh.passed and again.objective == fresh.objective
    assert [g.name for g in again.gates] == [g.name for g in fresh.gates]          # the confirm gate ran too
    grown = SEED.replace(PARAMS, 'PARAMS = {"BLOCK": [256, 512, 1024], "num_warps": [4], "num_stages": [1]}')
    third = verify(relu, grown, ["h100"], seed=verify_seed(grown), trace_cache=cache, compile=False)
    gate = next(g for g in third.gates if g.name == "correctness")
    assert third.passed and gate.details["cached_runs"] == gate_runs(first)
    # a config past the default runs at the smallest check shape (the rest only if the model picks it)
    assert gate.details["runs"] == 1 and gate.details["configs"] == 1


def gate_runs(result) -> int:
    return next(g for g in result.gates if g.name == "correctness").details["runs"]


def _open_and_put_trace(path: str, i: int) -> int:
    cache = TraceCache(path)
    cache.put("ctx", {"BLOCK": i}, [{"shape_index": 0}])
    cache.close()
    return i


def test_workers_opening_one_new_trace_cache_together_do_not_fail(tmp_path):
    """The run's workers share one file: switching a new file to WAL takes an exclusive lock, and
    SQLite answers "database is locked" at once (seen under load: two Ray workers of one run)."""
    import multiprocessing as mp
    path = str(tmp_path / "traces.sqlite")
    with mp.get_context("spawn").Pool(8) as pool:
        for round_ in range(3):
            target = f"{path}.{round_}"
            assert sorted(pool.starmap(_open_and_put_trace, [(target, i) for i in range(16)])) == list(range(16))
            reopened = TraceCache(target)
            assert all(reopened.get("ctx", {"BLOCK": i}) == [{"shape_index": 0}] for i in range(16))
