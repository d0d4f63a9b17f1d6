"""Lazy dense traces (docs/verifier.md): configs are ranked on provisional (sparse-plan) traces and only
the picked ones are traced densely; what is provisional is the driver's decision, never the child's."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton: one trace runs in this process

import pytest  # noqa: E402

from kernelfoundry import REPO_DIR  # noqa: E402
from kernelfoundry.candidate import config_key  # noqa: E402
from kernelfoundry.evaluate import inprocess, pipeline  # noqa: E402
from kernelfoundry.evaluate.trace.counts import MalformedTrace, build_config_trace  # noqa: E402
from kernelfoundry.task import load_task  # noqa: E402

SOFTMAX = REPO_DIR / "experiments/tasks/softmax.yaml"
NAIVE = (REPO_DIR / "experiments/tasks/kernels/softmax_naive.py").read_text()
CHEAT = REPO_DIR / "tests/adversarial/softmax/rare_heavy_stats_pass.py"


@pytest.fixture(scope="module")
def softmax():
    return load_task(SOFTMAX)


def _raw_trace(task, source, dense):
    payload = {**inprocess._payload(source, task, None, None, 0), "kind": "trace", "trace_programs": 4,
               "dense": dense}
    result, blob = inprocess._run(payload)
    assert result["trace"]["error"] is None
    return result["trace"]["traces"][0], blob


def test_the_judge_holds_the_child_to_the_kind_of_trace_the_driver_asked_for(softmax):
    sparse, sparse_blob = _raw_trace(softmax, NAIVE, dense=False)
    dense, dense_blob = _raw_trace(softmax, NAIVE, dense=True)
    provisional = build_config_trace(sparse, sparse_blob, dense=False)
    full = build_config_trace(dense, dense_blob, dense=True)
    assert provisional.provisional and not full.provisional
    assert not any(p.get("dense") for launch in sparse["launches"] for p in launch["programs"])
    # an honest loop does equal work on every trip: the sparse plan counts what the dense run counts
    for a, b in zip(provisional.launches, full.launches):
        assert a.load_bytes == pytest.approx(b.load_bytes, rel=1e-9)
        assert a.store_bytes == pytest.approx(b.store_bytes, rel=1e-9)
        assert a.elementwise_ops == pytest.approx(b.elementwise_ops, rel=1e-9)
    # a child that ran a program densely where a provisional trace was asked for, or that skipped the
    # dense lead where a dense one was asked for, returns a malformed trace
    with pytest.raises(MalformedTrace, match="provisional trace ran a program densely"):
        build_config_trace(dense, dense_blob, dense=False)
    with pytest.raises(MalformedTrace, match="lead program was not run densely"):
        build_config_trace(sparse, sparse_blob, dense=True)


def _verify(task, source, lazy, monkeypatch):
    monkeypatch.setattr(pipeline, "LAZY_DENSE_TRACES", lazy)
    monkeypatch.setattr(pipeline, "LAZY_MIN_CONFIGS", 2)
    return pipeline.verify(task, source, seed=0, compile=False)


@pytest.mark.slow
def test_only_the_picked_configs_are_traced_densely_and_the_verdict_is_the_same(softmax, monkeypatch):
    source = NAIVE.replace('"BLOCK_N": [256, 512]', '"BLOCK_N": [256, 512, 1024, 2048]')
    assert source != NAIVE
    lazy = _verify(softmax, source, True, monkeypatch)
    eager = _verify(softmax, source, False, monkeypatch)
    assert lazy.passed and eager.passed
    assert lazy.objective == pytest.approx(eager.objective, rel=1e-9)
    assert lazy.descriptors == eager.descriptors
    picked = {config_key({k: v for k, v in hw.best_params.items() if k == "BLOCK_N"})
              for hw in lazy.hardware.values()}
    dense = {config_key(t.config) for t in lazy.traces if not t.provisional}
    assert picked <= dense, "a picked config kept a provisional trace"
    assert any(t.provisional for t in lazy.traces), "every config was traced densely"
    assert not any(t.provisional for t in eager.traces)
    trace_gate = next(g for g in lazy.gates if g.name == "trace")
    assert trace_gate.details["densified"] == len(dense)


@pytest.mark.slow
def test_work_hidden_on_rare_trips_is_counted_as_if_everything_were_dense(softmax, monkeypatch):
    """The cheat looks cheaper on its provisional traces, so it is picked, traced densely and scored
    as the dense-everything verifier scores it."""
    source = CHEAT.read_text()
    lazy = _verify(softmax, source, True, monkeypatch)
    eager = _verify(softmax, source, False, monkeypatch)
    assert (lazy.passed, lazy.gate) == (eager.passed, eager.gate) == (True, None)
    assert lazy.objective == pytest.approx(eager.objective, rel=1e-9)
    assert next(g for g in lazy.gates if g.name == "trace").details["densified"] >= 1


def _with_output_coverage(trace, fraction):
    """*trace* as if its sampled programs had stored *fraction* of their output bytes (edge tiles only)."""
    import copy
    low = copy.deepcopy(trace)
    for launch in low.launches:
        for traffic in launch.traffic.values():
            if traffic.role.startswith("output:"):
                traffic.unique_store_bytes *= fraction
    return low


def test_a_provisional_trace_is_judged_for_coverage_only_once_it_is_dense(softmax):
    """A provisional trace runs no census, whose correction of edge tiles only scales counts up: a
    provisional trace whose samples caught edge tiles is traced densely before its coverage is judged
    (KernelBench's transposed 3D convolutions were refused at 66.7% this way)."""
    from kernelfoundry.candidate import parse_param_space
    from kernelfoundry.records import GateResult
    sparse, sparse_blob = _raw_trace(softmax, NAIVE, dense=False)
    dense, dense_blob = _raw_trace(softmax, NAIVE, dense=True)
    edge_only = _with_output_coverage(build_config_trace(sparse, sparse_blob, dense=False), 0.5)
    full = build_config_trace(dense, dense_blob, dense=True)
    space = parse_param_space(NAIVE)
    asked = []

    def densify(todo, ahead=None):
        asked.append([config_key(c) for c in todo])
        return GateResult(name="trace", passed=True), [full]

    ok = pipeline.score_and_describe(softmax, [edge_only], space, ["h100"], [], seed=0, seconds_so_far=0.0,
                                     densify=densify)
    assert ok.passed and asked == [[config_key(full.config)]]
    # the same coverage in a dense trace is refused, and a dense trace that stays low after densifying too
    dense_low = _with_output_coverage(full, 0.5)
    bad = pipeline.score_and_describe(softmax, [dense_low], space, ["h100"], [], seed=0, seconds_so_far=0.0)
    assert not bad.passed and bad.gate == "model" and "distinct bytes into output 0" in bad.reason
    still = pipeline.score_and_describe(softmax, [edge_only], space, ["h100"], [], seed=0, seconds_so_far=0.0,
                                        densify=lambda todo, ahead=None: (GateResult(name="trace", passed=True), [dense_low]))
    assert not still.passed and "distinct bytes into output 0" in still.reason


def test_only_a_dense_trace_runs_the_sharing_check(softmax):
    # the sharing check only ever takes sharing credit away: a provisional trace skips it (a config it
    # would have cost looks no slower and, once picked, is traced densely with the check)
    probe = (REPO_DIR / "tests/adversarial/softmax/probe_shared_anchor.py").read_text()
    sparse, _ = _raw_trace(softmax, probe, dense=False)
    dense, _ = _raw_trace(softmax, probe, dense=True)
    assert all(launch["wave"]["contested"] == [] for launch in sparse["launches"])
    assert any(launch["wave"]["contested"] for launch in dense["launches"])


def test_picks_that_keep_moving_are_made_among_the_dense_traces(softmax, monkeypatch):
    """Each dense trace here counts far more work than its provisional one, so every round the model
    picks another provisional config; past DENSIFY_ROUNDS the provisional ones are dropped and the
    model picks among the dense ones (never a provisional figure reported, no job tracing them all)."""
    import copy
    from kernelfoundry.candidate import parse_param_space
    from kernelfoundry.records import GateResult
    source = NAIVE.replace('"BLOCK_N": [256, 512]', '"BLOCK_N": [256, 512, 1024, 2048]')
    space = parse_param_space(source)
    configs = [{"BLOCK_N": b} for b in space["BLOCK_N"]]
    payload = {**inprocess._payload(source, softmax, configs, None, 0), "kind": "trace", "trace_programs": 4,
               "dense": False}
    result, blob = inprocess._run(payload)
    provisional = [build_config_trace(t, blob, dense=False) for t in result["trace"]["traces"]]
    assert len({config_key(t.config) for t in provisional}) == 4
    asked = []

    def densify(todo, ahead=None):
        asked.append([config_key(c) for c in todo])
        heavy = []
        for trace in provisional:
            if config_key(trace.config) in asked[-1]:
                trace = copy.deepcopy(trace)
                trace.provisional = False
                for launch in trace.launches:
                    launch.elementwise_ops *= 1000.0
                    launch.transcendental_ops *= 1000.0
                heavy.append(trace)
        return GateResult(name="trace", passed=True), heavy

    monkeypatch.setattr(pipeline, "DENSIFY_ROUNDS", 2)
    gate = GateResult(name="trace", passed=True)
    out = pipeline.score_and_describe(softmax, list(provisional), space, ["h100"], [gate], seed=0,
                                      seconds_so_far=0.0, densify=densify)
    assert out.passed, out.reason
    assert len(asked) == 2 and all(len(a) == 1 for a in asked)
    assert gate.details["densified"] == 2 and gate.details["dropped"] == 2
    assert out.traces and not any(t.provisional for t in out.traces)
    picked = config_key({"BLOCK_N": out.hardware["h100"].best_params["BLOCK_N"]})
    assert picked in {a[0] for a in asked}
