"""Span shapes stay within the interpreter's budget when a fixed size multiplies the grid, and a span
run that uses up its CPU time is the verifier's limit (inconclusive), not the kernel's fault."""

from __future__ import annotations

from pathlib import Path

from kernelfoundry.evaluate.contract.span_shape import (GRID_PROGRAMS_MAX, ROWS, TRIP_BUDGET, _counter,
                                                         grid_span_shape, launch_tiles, shape_symbols, span_shape)
from kernelfoundry.evaluate.judge.correctness import Judge
from kernelfoundry.records import INCONCLUSIVE, is_inconclusive
from kernelfoundry.sandbox.channel import BlobReader
from kernelfoundry.task import load_task, task_from_dict

REPO = Path(__file__).resolve().parents[2]
SOFTMAX = load_task(REPO / "experiments" / "tasks" / "softmax.yaml")

# A batch of 16 folded into the programs (not a size symbol) and spatial dims the grid tiles by about
# 2.7 positions per program: what an imported convolution looks like to the probe.
BATCHED = task_from_dict({
    "name": "batched", "reference": "import torch\ndef reference(x, w):\n    return x\n",
    "inputs": {"x": {"shape": [16, "C", "D", "H", "W"], "dtype": "float32"},
               "w": {"shape": ["C", "K", 3, 5, 5], "dtype": "float32"}},
    "shapes": {"check": [{"C": 4, "D": 4, "H": 4, "W": 8, "K": 8}],
               "target": [{"C": 32, "D": 64, "H": 64, "W": 64, "K": 64}]},
    "seeds": [__file__]})
PROBE = {"base": {"C": 4, "D": 4, "H": 4, "W": 8, "K": 8}, "programs": [48],
         "ones": {"C": [48], "D": [32], "H": [32], "W": [16], "K": [48]}}


def test_programs_are_scaled_from_the_probes_own_count():
    symbols = shape_symbols(BATCHED)
    launches = launch_tiles(PROBE, symbols)
    grid = [d for d in symbols if launches[0][d] != float("inf")]
    assert grid == ["D", "H", "W"]
    programs = _counter(PROBE, grid, launches)
    assert programs(PROBE["base"]) == 48                         # the fixed batch's share is counted
    assert programs({**PROBE["base"], "W": 16}) == 48 * 6 / 3


def test_a_grid_too_large_for_the_budget_gives_up_programs_before_the_loops_give_up_blocks():
    config = {"BLOCK_M": 16, "BLOCK_N": 256, "BLOCK_K": 64}
    env = span_shape(BATCHED, config, PROBE)
    grid = ("D", "H", "W")
    programs = _counter(PROBE, list(grid), launch_tiles(PROBE, shape_symbols(BATCHED)))
    assert env["C"] == 31 and env["K"] == 63                     # the loop dimensions keep their span
    assert programs(env) <= TRIP_BUDGET or all(env[d] == ROWS for d in grid)
    assert programs(env) < programs({**env, "D": 9, "H": 9, "W": 9})
    many = grid_span_shape(BATCHED, config, PROBE)
    assert programs(many) <= GRID_PROGRAMS_MAX or all(many[d] == ROWS for d in grid)


def test_a_row_kernel_keeps_its_span_shape():
    probe = {"base": {"M": 64, "N": 1000}, "programs": [64], "ones": {"M": [1], "N": [64]}}
    env = span_shape(SOFTMAX, {"BLOCK_N": 1024}, probe)
    assert env["M"] == ROWS and env["N"] > 2 * 1024


def _judged(span: bool, error: str):
    plan = [{"shape": {"M": 3, "N": 4097}, "profile": "normal", "config": {"BLOCK_N": 1024}, "call": 7,
             **({"span": True} if span else {})}]
    report = {"runs": [], "failed_run": 0, "error": error}
    return Judge(SOFTMAX, plan, seed=0).judge(report, BlobReader(b""))


def test_a_span_run_out_of_cpu_time_is_inconclusive_and_a_checked_shape_or_an_error_is_not():
    cpu = "launch did not finish within 30 s of CPU time"
    gate = _judged(True, cpu)
    assert not gate.passed and gate.reason.startswith(INCONCLUSIVE) and gate.details["inconclusive"]
    assert is_inconclusive({"passed": False, "gates": [gate.to_dict()]})
    for span, error in ((False, cpu), (True, "IndexError: out of bounds"),
                        (True, "launch did not finish within 90 s of wall-clock time: it waited, using less than 30 "
                               "CPU seconds")):
        gate = _judged(span, error)
        assert not gate.passed and not gate.details.get("inconclusive"), (span, error)


def test_a_grid_padded_by_the_kernel_costs_it_no_span():
    """A kernel that pads its grid to 257 programs (tests/adversarial/softmax/span_grid_padding.py) makes
    the probe count many programs at every size: the rows still span blocks."""
    padded = {"base": {"M": 64, "N": 1000}, "programs": [257], "ones": {"M": [257], "N": [257]}}
    env = span_shape(SOFTMAX, {"BLOCK_N": 1024}, padded)
    assert env is not None and env["N"] > 1024                   # two blocks, one of them ragged


def test_a_padded_grid_cannot_hide_which_dimension_holds_the_rows():
    """tests/adversarial/softmax/long_rows_grid_padding.py: with its grid padded to 4,097 programs the
    probe names no grid dimension, and the one balanced long shape (971 x 933) never reached the 65,536
    columns its max pass skips; one long shape per dimension does."""
    from kernelfoundry.evaluate.contract.span_shape import long_shapes
    padded = {"base": {"M": 64, "N": 1000}, "programs": [4097], "ones": {"M": [4097], "N": [4097]}}
    shapes = long_shapes(SOFTMAX, {"BLOCK_N": 1024}, padded)
    assert any(env["N"] > 65536 and env["M"] == ROWS for env in shapes)
    honest = {"base": {"M": 64, "N": 1000}, "programs": [64], "ones": {"M": [1], "N": [64]}}
    assert long_shapes(SOFTMAX, {"BLOCK_N": 1024}, honest) == [{"M": 2, "N": 124415}]   # a known grid: one


# A 3 x 3 convolution then one program per output position (a reduction over channels): the probe at size 1
# fails (no output), at size 3 it works.  The conv launch covers every position in one tile at the check shape.
CONV = task_from_dict({
    "name": "conv_then_rows", "reference": "import torch\ndef reference(x):\n    return x\n",
    "inputs": {"x": {"shape": ["B", 16, "H", "W"], "dtype": "float32"}},
    "shapes": {"check": [{"B": 16, "H": 14, "W": 18}], "target": [{"B": 128, "H": 256, "W": 256}]},
    "seeds": [__file__]})
CONV_PROBE = {"base": {"B": 16, "H": 14, "W": 18}, "programs": [16, 3072],
              "ones": {"B": [1, 192], "H": [16, 256], "W": [16, 192]}, "ones_at": {"B": 1, "H": 3, "W": 3}}


def test_a_windows_input_extent_spans_blocks_together_and_never_falls_below_the_window():
    from kernelfoundry.evaluate.contract.span_shape import long_shapes, windowed_floor
    config = {"BLOCK_N": 256, "BLOCK_R": 128}
    env = span_shape(CONV, config, CONV_PROBE)
    # the two windowed dimensions hold at least 2 * 256 + 3 positions between them: the window's launch
    # tiles them (256 per program at the target) although one tile covers them at the check shape
    assert (env["H"] - 2) * (env["W"] - 2) >= 2 * 256 + 3           # output positions: two tiles and a tail
    assert env["H"] - 2 >= windowed_floor(256, 2) and env["W"] - 2 >= windowed_floor(256, 2)
    assert env["H"] < 256 and env["W"] < 256                      # not the target's extent: grid dimensions
    assert all(shape["H"] > 3 and shape["W"] > 3 for shape in long_shapes(CONV, config, CONV_PROBE))
    # a probe that never worked is the old fail-closed case: loop dimensions, as long as the budget allows
    failed = {**CONV_PROBE, "ones": {**CONV_PROBE["ones"], "H": None, "W": None}, "ones_at": {"B": 1}}
    closed = span_shape(CONV, config, failed)
    assert closed["H"] > env["H"] and closed["W"] > env["W"]
