"""Size symbols that follow a problem's own variables (identity.py) and check shapes within the
interpreter's work budget (budget.py), on small in-process problems (meta device only)."""

import math

import torch

from kernelfoundry.kernelbench import budget
from kernelfoundry.kernelbench.identity import probe
from kernelfoundry.kernelbench.inspect_job import _load, _plain
from kernelfoundry.kernelbench.shrink import assign_symbols, symbol_keys, symbolize

CONV = '''
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, bias=False)
    def forward(self, x):
        return self.conv(x)
batch_size = 16
in_channels = 32
out_channels = 16
depth = 16
height = 32
width = 64
def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]
def get_init_inputs():
    return [in_channels, out_channels, (3, 5, 7)]
'''

TIED = '''
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
    def forward(self, x):
        return x + self.fc(x)          # n_out must equal n_in
batch = 64
n_in = 64
n_out = 64
def get_inputs():
    return [torch.rand(batch, n_in)]
def get_init_inputs():
    return [n_in, n_out]
'''


def described(source):
    ns = _load(source, "problem.py")
    with torch.device("meta"):
        values = ns["get_inputs"]()
        init_values = list(ns["get_init_inputs"]())
        model = ns["Model"](*init_values)
    inputs = [{"name": "x", "target": list(values[0].shape), "role": "input"}]
    inputs += [{"name": a.replace(".", "_"), "module_attr": a, "target": list(t.shape), "role": "parameter"}
               for a, t in model.named_parameters()]
    init = [_plain(v, "arg") for v in init_values]
    ident = probe(ns, 0, inputs, init, _plain, 16)
    return ident, {s["name"]: s["target"] for s in inputs}, init


def test_equal_values_of_different_variables_get_different_symbols():
    ident, shapes, init = described(CONV)
    symbols, symbolic = assign_symbols(shapes, ident=ident)
    x, w = symbolic["x"], symbolic["conv_weight"]
    assert x[1] == w[0] and x[1] != x[3]               # in_channels ties x to the weight; height does not
    assert isinstance(x[0], str) and isinstance(x[2], str) and x[0] != x[2]   # batch, depth: free, own symbols
    assert w[1] == 16 and w[2:] == [3, 5, 7]           # out_channels (in the constructor only) stays literal
    sym_init = symbolize(init, symbols, symbol_keys(shapes, symbolic, ident), ident)
    assert sym_init == [{"sym": x[1]}, 16, {"tuple": [3, 5, 7]}]
    # without the small sizes, only sizes over 16 are symbols, as before
    symbols, symbolic = assign_symbols(shapes, ident=type(ident)(ident.dims, ident.init, ident.globals, set()))
    assert symbolic["x"][0] == 16 and symbolic["x"][2] == 16 and symbolic["x"][1] != symbolic["x"][3]


def test_sizes_the_model_ties_together_share_a_symbol():
    ident, shapes, _ = described(TIED)
    _, symbolic = assign_symbols(shapes, ident=ident)
    assert symbolic["x"][1] == symbolic["fc_weight"][0] == symbolic["fc_weight"][1] == symbolic["fc_bias"][0]
    assert symbolic["x"][0] != symbolic["x"][1]        # the batch is free


def test_check_shapes_fit_the_work_budget():
    def reference(x, w):
        return torch.nn.functional.conv_transpose3d(x, w)
    inputs = [{"shape": ["n", "c", "d", "h", "w"], "dtype": "float32"}, {"shape": ["c", 16, 3, 5, 7], "dtype": "float32"}]
    symbols = {"n": 16, "c": 32, "d": 16, "h": 32, "w": 64}
    env = {"n": 16, "c": 16, "d": 16, "h": 16, "w": 16}

    def cost(e):
        return budget.work(reference, inputs, e)
    assert cost(env) == 16 * 16 * 18 * 20 * 22 * 16 * 105       # outputs x C_in x taps, as the gather computes
    fitted = budget.fit(env, symbols, [16, 3, 5, 7], 2, budget.BUDGET[0], cost)
    assert cost(fitted) <= budget.BUDGET[0]
    assert all(fitted[s] % 2 == symbols[s] % 2 and fitted[s] >= 2 for s in symbols)
    # sizes at which the reference fails are never picked (a plain conv's input below its kernel)

    def plain(x, w):
        return torch.nn.functional.conv2d(x, w)
    inputs2 = [{"shape": ["n", 64, "h", "h"], "dtype": "float32"}, {"shape": [64, 64, 9, 9], "dtype": "float32"}]
    fitted = budget.fit({"n": 32, "h": 64}, {"n": 32, "h": 64}, [], 2, 1e6, lambda e: budget.work(plain, inputs2, e))
    assert fitted["h"] >= 9 and math.prod(fitted.values()) < 32 * 64


def test_a_second_check_shape_is_widened_within_its_budget():
    def reference(x, w):
        return torch.nn.functional.conv_transpose3d(x, w)
    inputs = [{"shape": ["n", "c", "d", "h", "w"], "dtype": "float32"}, {"shape": ["c", 16, 3, 5, 7], "dtype": "float32"}]
    symbols = {"n": 16, "c": 32, "d": 16, "h": 32, "w": 64}

    def cost(e):
        return budget.work(reference, inputs, e)
    first = budget.fit({s: 16 for s in symbols}, symbols, [16, 3, 5, 7], 2, budget.BUDGET[0], cost)
    second = budget.widen(first, symbols, [16, 3, 5, 7], 2, budget.BUDGET[1], cost)
    assert second != first and cost(second) <= budget.BUDGET[1]
    assert all(second[s] >= first[s] and second[s] % 2 == symbols[s] % 2 for s in symbols)
    # nothing fits: the shape stays as it is
    assert budget.widen(first, symbols, [16, 3, 5, 7], 2, cost(first), cost) == first


def test_lowered_sizes_keep_two_channels_per_group():
    """A GroupNorm of 256 groups over 8192 channels: lowered to 256 channels (one per group) its
    variance is zero and the normalized output is rounding noise times 1/sqrt(eps)."""
    assert budget.lower_sizes(8192, [256], 2)[0] == 512
    assert budget.lower_sizes(256, [256], 2)[0] == 256            # a size with one group per channel keeps it
    assert budget.lower_sizes(8192, [], 2)[:3] == [2, 4, 6]        # no group count: parity only


def test_the_work_counts_a_program_per_row():
    """A naive kernel runs a program per row of a reduction; the interpreter pays per program."""
    import torch

    def rms(x):
        return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)
    inputs = [{"shape": ["a", "b", "c", "d"], "dtype": "float32"}]
    small, large = ({"a": n, "b": 4, "c": n, "d": n} for n in (4, 8))
    rows = lambda e: e["a"] * e["c"] * e["d"]                      # noqa: E731 - the mean over dim 1
    assert budget.work(rms, inputs, large) - budget.work(rms, inputs, small) >= \
        budget.ROW_UNITS * (rows(large) - rows(small))
