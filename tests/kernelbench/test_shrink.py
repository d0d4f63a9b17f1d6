"""Size symbols, trait-keeping check shapes and size expressions of imported problems (pure Python)."""

import itertools
import math

import pytest

from kernelfoundry.kernelbench.shrink import assign_symbols, check_shapes, ladder, render, resolve, symbolize
from kernelfoundry.kernelbench.sizes import SizeError, size_expr


@pytest.mark.parametrize("value", [4095, 8191, 4096, 393216, 1001, 777, 2049, 20000])
def test_ladder_keeps_parity_and_multiple_of_16(value):
    sizes = ladder(value, [])
    assert len(sizes) >= 2 and all(s > 1 for s in sizes)
    for s in sizes:
        assert s % 2 == value % 2
        assert (s % 16 == 0) == (value % 16 == 0)


def test_ladder_keeps_divisibility_by_small_constructor_ints():
    assert all(s % 32 == 0 for s in ladder(8192, [32, 3]))   # GroupNorm's 32 groups divide 8192
    assert ladder(8192, [3]) == ladder(8192, [])              # 3 does not divide 8192: no constraint


def test_equal_dims_share_a_symbol_and_small_dims_stay_literal():
    symbols, shapes = assign_symbols({"x": [128, 4096], "w": [1000, 4096], "b": [1000], "s": [1, 3, 16]})
    assert shapes["x"] == ["x_0", "x_1"] and shapes["w"] == ["w_0", "x_1"] and shapes["b"] == ["w_0"]
    assert shapes["s"] == [1, 3, 16]
    assert symbols == {"x_0": 128, "x_1": 4096, "w_0": 1000}


def test_check_shapes_are_small_and_tell_symbols_apart():
    symbols, shapes = assign_symbols({"x": [64, 96, 1001], "w": [96, 1001]})
    envs = check_shapes(symbols, shapes, [])
    assert 1 <= len(envs) <= 2
    for env in envs:
        assert env["x_2"] % 2 == 1 and env["x_2"] % 16 == 1001 % 16
        assert env["x_0"] * env["x_1"] * env["x_2"] <= 40_000
    assert envs[0]["x_0"] != envs[0]["x_1"]


def test_constructor_arguments_become_symbolic_and_render_back():
    symbols = {"x_1": 96, "x_2": 1001}
    init = symbolize([{"tuple": [96, 1001]}, 1e-5, 3], symbols)
    assert init == [{"tuple": [{"sym": "x_1"}, {"sym": "x_2"}]}, 1e-5, 3]
    assert resolve(init, {"x_1": 32, "x_2": 9}) == [(32, 9), 1e-5, 3]
    assert render(init) == "[(env['x_1'], env['x_2']), 1e-05, 3]"


def test_size_expressions_from_two_traces():
    assert size_expr(7, 7, {"a": 16}, {"a": 48}, ["a"]) == "7"
    assert size_expr(288.0, 800.0, {"a": 32, "b": 9}, {"a": 32, "b": 25}, ["a", "b"]) == "float(S_a * S_b)"
    assert size_expr(2, 6, {"c": 64}, {"c": 192}, ["c"]) == "(S_c) // 32"
    assert size_expr(1 / 288, 1 / 800, {"a": 32, "b": 9}, {"a": 32, "b": 25}, ["a", "b"]) == "(1.0 / (S_a * S_b))"
    with pytest.raises(SizeError):
        size_expr(5, 11, {"a": 16}, {"a": 48}, ["a"])


def test_literal_positions_stay_literal_and_break_a_coincidence():
    # a Linear's 96 outputs fixed inside the Model, equal to the batch size by chance
    shapes = {"x": [96, 200], "fc_weight": [96, 200], "fc_bias": [96]}
    symbols, symbolic = assign_symbols(shapes, {("fc_weight", 0), ("fc_bias", 0)})
    assert symbolic == {"x": ["x_0", "x_1"], "fc_weight": [96, "x_1"], "fc_bias": [96]}
    assert symbols == {"x_0": 96, "x_1": 200}


def test_ladder_starts_at_a_minimum_and_huge_volumes_drop_divisibility():
    assert ladder(512, [4], at_least=48)[0] == 48 and all(s % 16 == 0 for s in ladder(512, [4], at_least=48))
    # a 3D volume whose side is kept divisible by a kernel size of 3 would be 48^3 per channel
    symbols, shapes = assign_symbols({"x": [8, 48, 96, 96, 96]})
    envs = check_shapes(symbols, shapes, [3])
    assert all(math.prod([8, e["x_1"]] + [e["x_2"]] * 3) <= (1 << 20) for e in envs)
    symbols, shapes = assign_symbols({"x": [8, 64, 96]})            # small enough: divisibility kept
    assert all(e["x_2"] % 3 == 0 for e in check_shapes(symbols, shapes, [3]))


def test_a_sum_of_sizes_is_a_size_expression():
    assert size_expr(72, 56, {"a": 20, "b": 32}, {"a": 12, "b": 32}, ["a", "b"]) == "(S_a + S_a + S_b)"


def test_the_probe_shape_gives_every_two_symbols_a_new_ratio():
    """At the check shape B_1 = 2 * A_1; a probe keeping that ratio made 8 * A_1 * A_2 (an einsum's
    flattened rows) and 4 * A_2 * B_1 the same number at both shapes, and the seed read the wrong one."""
    from kernelfoundry.kernelbench.shrink import ladder
    from kernelfoundry.kernelbench.sizes import probe_env, size_expr
    symbols = {"A_1": 256, "A_2": 512, "A_3": 256, "B_1": 768}
    env0 = {"A_1": 16, "A_2": 16, "A_3": 16, "B_1": 32}
    probe = probe_env(symbols, env0, {s: ladder(v, [], 2) for s, v in symbols.items()})
    assert all(probe[s] != env0[s] for s in symbols) and len(set(probe.values())) == len(probe)
    for s in symbols:
        for t in symbols:
            if s < t:
                assert probe[s] * env0[t] != probe[t] * env0[s], (s, t, probe)
    rows = lambda e: 8 * e["A_1"] * e["A_2"]          # noqa: E731
    assert size_expr(rows(env0), rows(probe), env0, probe, list(symbols)) == "8 * S_A_1 * S_A_2"


def test_of_two_expressions_that_fit_both_shapes_the_one_with_the_plainer_factor_wins():
    """A GroupNorm's count C * D * H * W / 8 against 15/128 * N * C * H * W: where D = 15 N / 16 at
    both traced shapes both fit; the plainer factor is the problem's own."""
    from kernelfoundry.kernelbench.sizes import size_expr
    names = ["N", "C", "D", "H", "W"]
    a = {"N": 16, "C": 24, "D": 15, "H": 6, "W": 10}
    b = {"N": 32, "C": 40, "D": 30, "H": 12, "W": 14}
    count = lambda e: e["C"] * e["D"] * e["H"] * e["W"] / 8          # noqa: E731
    assert count(a) == 15 * a["N"] * a["C"] * a["H"] * a["W"] / 128 and \
        count(b) == 15 * b["N"] * b["C"] * b["H"] * b["W"] / 128
    assert size_expr(count(a), count(b), a, b, names) == "float((S_C * S_D * S_H * S_W) / 8)"


def test_a_size_divided_into_groups_keeps_two_per_group():
    """8192 channels in 16 groups shrunk to 16 made a GroupNorm over one channel: zero spread, the
    output rounding noise over sqrt(eps); the ladder starts at two per group."""
    from kernelfoundry.kernelbench.shrink import ladder
    assert ladder(8192, [16])[0] == 32 and all(v % 16 == 0 for v in ladder(8192, [16]))
    assert ladder(16, [16])[0] == 16                 # the size is one group at the target too
    assert ladder(8192, [])[0] == 16


def test_a_size_minus_one_is_read_with_the_smallest_constant_and_the_probe_changes_every_difference():
    """An exclusive scan narrows a row of n to n - 1. With m + 16 = n at both traced shapes, m + 15 fit
    as well and the seed read its length from the wrong dimension (out of bounds at the target, where
    m = n). The smaller constant wins, and the probe shape no longer keeps two sizes' difference."""
    from kernelfoundry.kernelbench.shrink import ladder
    from kernelfoundry.kernelbench.sizes import probe_env
    a, b = {"m": 16, "n": 32}, {"m": 32, "n": 48}
    assert size_expr(a["n"] - 1, b["n"] - 1, a, b, ["m", "n"]) == "(S_n - 1)"
    assert size_expr(float(a["n"] - 1), float(b["n"] - 1), a, b, ["m", "n"]) == "float(S_n - 1)"
    symbols = {"m": 32768, "n": 32768}
    probe = probe_env(symbols, a, {s: ladder(v, [], 2) for s, v in symbols.items()})
    assert probe["n"] - probe["m"] != a["n"] - a["m"], probe


def test_the_probe_shape_changes_every_sum_of_sizes():
    """A cat of a gather (idx_1 columns) and two x rows (x_1 each) has idx_1 + 2 * x_1 columns: at
    17 + 2 * 20 and 49 + 2 * 4 both 57, so the length was read as a constant."""
    from kernelfoundry.kernelbench.shrink import ladder
    from kernelfoundry.kernelbench.sizes import probe_env
    symbols = {"x_0": 40, "x_1": 100, "idx_1": 33}
    env0 = {"x_0": 8, "x_1": 20, "idx_1": 17}
    probe = probe_env(symbols, env0, {s: ladder(v, [], 2) for s, v in symbols.items()})
    for k in (1, 2, 3):
        for combo in itertools.combinations_with_replacement(symbols, k):
            assert sum(probe[s] for s in combo) != sum(env0[s] for s in combo), (combo, probe)


def test_the_probe_picks_the_most_constrained_size_first():
    """C / 256 channels per group has one rung above the check (C = 512); a batch N = 2 -> 4 chosen before
    it gave N and C the same ratio, and C // 256 was read as N // 2."""
    from kernelfoundry.kernelbench.sizes import probe_env
    env0 = {"x_0": 2, "x_1": 2, "bias_0": 256}
    ladders = {"x_0": [4, 6, 8, 10], "x_1": [4, 6, 8, 10], "bias_0": [512]}
    probe = probe_env({"x_0": 1024, "x_1": 8192, "bias_0": 8192}, env0, ladders)
    assert list(probe) == list(env0) and probe["bias_0"] == 512
    assert probe["x_0"] * env0["bias_0"] != probe["bias_0"] * env0["x_0"]
    assert size_expr(1, probe["bias_0"] // 256, env0, probe, list(env0)) == "(S_bias_0) // 256"


DILATED = '''
import torch

class Model(torch.nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = torch.nn.Conv2d(c_in, c_out, (5, 9), padding=(2, 4), dilation=(2, 3), bias=False)

    def forward(self, x):
        return self.conv(x)

def get_inputs():
    return [torch.rand(8, 32, 256, 512)]

def get_init_inputs():
    return [32, 64]
'''


def test_a_wide_dilated_kernel_keeps_only_its_spatial_sizes_wide():
    from kernelfoundry.kernelbench import budget
    from kernelfoundry.kernelbench.inspect_job import describe
    desc = describe(DILATED, "dilated.py", 0)
    by_input = {s["name"]: s["shape"] for s in desc["inputs"]}
    x_syms, w_syms = by_input["x"], by_input["conv_weight"]
    channels = [d for d in (x_syms[1], w_syms[0]) if isinstance(d, str)]
    assert channels and all(env[d] < 48 for env in desc["check"] for d in channels), desc["check"]
    ns: dict = {}
    exec(compile(desc["reference"], "<reference>", "exec"), ns)
    for i, env in enumerate(desc["check"]):          # within the interpreter's work budget, and it runs
        assert budget.work(ns["reference"], desc["inputs"], env) <= budget.BUDGET[min(i, 1)]
