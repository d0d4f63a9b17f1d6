"""Where the verifier's time goes: per-gate seconds counted per candidate, in summary.json and the printout."""

from kernelfoundry.search.stats import RunStats, format_gate_seconds, percentile


def test_percentile_interpolates_between_ranks():
    assert percentile([3.0], 0.9) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.5) == 3.0
    assert abs(percentile([0.0, 10.0], 0.9) - 9.0) < 1e-12


def test_gate_seconds_median_p90_per_gate_skip_missing_and_bad_values():
    stats = RunStats()
    for k in range(10):
        gates = [{"name": "hack", "passed": True, "seconds": 0.01},
                 {"name": "correctness", "passed": True, "seconds": float(k)}]
        if k < 4:                              # only some candidates reach the trace
            gates.append({"name": "trace", "passed": True, "seconds": 10.0 + k})
        stats.note(cid=k, passed=False, gate="trace", objective=None, mutator="builtin:x", usage=None, gates=gates)
    stats.note(cid=99, passed=False, gate="load", objective=None, mutator="llm", usage=None,
               gates=[{"name": "load", "passed": False, "reason": "no seconds"},
                      {"name": "trace", "seconds": float("nan")}])
    stats.note(cid=100, passed=True, gate=None, objective=1.0, mutator="seed", usage=None,      # a shared verdict
               gates=[{"name": "trace", "seconds": 500.0, "cached": True}])
    summary = stats.gate_seconds_summary()
    assert set(summary) == {"hack", "correctness", "trace"}
    assert summary["correctness"] == {"n": 10, "median": 4.5, "p90": 8.1, "total": 45.0}
    assert summary["trace"]["n"] == 4 and summary["trace"]["median"] == 11.5
    line = format_gate_seconds(summary)
    assert line.index("hack") < line.index("correctness") < line.index("trace")
    assert "correctness 4.50/8.10" in line


def test_inconclusive_verdicts_are_counted_apart():
    from kernelfoundry.records import INCONCLUSIVE
    stats = RunStats()
    stats.note(cid=0, passed=False, gate="trace", objective=None, mutator="builtin:whole_row", usage=None,
               gates=[{"name": "correctness", "passed": True},
                      {"name": "trace", "passed": False, "reason": INCONCLUSIVE, "details": {"inconclusive": True}}])
    stats.note(cid=1, passed=False, gate="trace", objective=None, mutator="builtin:whole_row", usage=None,
               gates=[{"name": "trace", "passed": False, "reason": "launch raised"}])
    assert stats.inconclusive == 1 and stats.gate_failures["trace"] == 2
