"""vectorize_loop: unit-step loops over a strided axis become block loops over a 2-D tile; with
whole_row after it the tile is read once.  Results run under the Triton interpreter (trusted
sources: the project's seeds, text variants of them and the mutator's own edits)."""

from __future__ import annotations

import ast
import sys

import pytest
import torch

from kernelfoundry.mutate.ast_module import jit_functions
from tests.mutate.test_builtin_run import apply, load_module, mismatch, task
from tests.mutate.test_split_row import skip_reason


def seed() -> str:
    return task("rmsnorm").seeds[0].read_text()


def loads(source: str, kernel: str) -> int:
    return sum(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "load"
               for n in ast.walk(jit_functions(ast.parse(source))[kernel]))


def test_rmsnorm_seed_gets_tile_loops_and_matches_reference(tmp_path):
    t = task("rmsnorm")
    new = apply("vectorize_loop", seed())
    assert "for f in range" not in new and "tl.arange(0, BLOCK_R)[:, None]" in new
    assert mismatch(t, new, tmp_path, configs=3) is None          # F=5 and F=64: partial and whole blocks


def test_whole_row_after_it_reads_the_tile_once(tmp_path):
    t = task("rmsnorm")
    both = apply("whole_row", apply("vectorize_loop", seed()))
    assert loads(both, "rmsnorm_kernel") == 2 and loads(both, "rmsnorm_kernel_row") == 1
    assert mismatch(t, both, tmp_path, configs=3) is None


def run_pair(old: str, new: str, tmp_path, x: torch.Tensor, **config) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = load_module(old, tmp_path), load_module(new, tmp_path)
    try:
        hints = {"num_warps": 4, "num_stages": 1}
        return a.launch(x.clone(), **config, **hints), b.launch(x.clone(), BLOCK_R=4, **config, **hints)
    finally:
        sys.modules.pop(a.__name__, None)
        sys.modules.pop(b.__name__, None)


@pytest.mark.parametrize("init,update", [
    ("sq = tl.full([BLOCK_S], float('-inf'), dtype=tl.float32)", "sq = tl.maximum(sq, x * x)"),
    ("sq = tl.full([BLOCK_S], float('inf'), dtype=tl.float32)", "sq = tl.minimum(x * x + 1.0, sq)"),
])
def test_max_and_min_accumulators_keep_their_identity_on_padded_rows(init, update, tmp_path):
    """Padded rows (past the bound) must not take part: an exp-like value there would be wrong."""
    variant = seed().replace("sq = tl.zeros([BLOCK_S], dtype=tl.float32)", init).replace("sq += x * x", update)
    assert variant != seed()
    new = apply("vectorize_loop", variant)
    x = torch.randn((2, 7, 3, 5), generator=torch.Generator().manual_seed(3))       # 7 rows: 4 + 3 valid
    want, got = run_pair(variant, new, tmp_path, x, BLOCK_S=32)
    assert torch.allclose(want, got, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("old,new,reason", [
    ("        sq += x * x\n", "        if f > 0:\n            sq += x * x\n", "control flow"),
    ("        sq += x * x\n", "        sq += x * x * prev\n        prev = x\n", "carries prev"),
    ("    rstd = 1.0 / tl.sqrt(sq / n_features + eps)", "    rstd = 1.0 / tl.sqrt(sq / n_features + eps) + 0 * x",
     "from the last trip"),
    ("        sq += x * x\n", "        sq += x * x + sq\n", "read or assigned elsewhere"),
    ("        sq += x * x\n", "        sq += tl.sum(x, axis=0) + x * x\n", "calls tl.sum"),
    ("tl.store(y_ptr + base + f * n_spatial + s,", "tl.store(y_ptr + base + s,", "same place on every trip"),
])
def test_skips_with_a_reason(old, new, reason):
    variant = seed().replace(old, new, 1)
    assert variant != seed()
    assert reason in skip_reason("vectorize_loop", variant)
    assert "no top-level unit-step loop" in skip_reason("vectorize_loop", task("softmax").seeds[0].read_text())


def test_a_carried_value_set_before_use_is_not_carried(tmp_path):
    """A temporary assigned before it is read on every trip is local to the trip."""
    variant = seed().replace("        sq += x * x\n", "        t = x * 2.0\n        sq += t * t * 0.25\n", 1)
    new = apply("vectorize_loop", variant)
    assert mismatch(task("rmsnorm"), new, tmp_path, configs=2) is None


LOOP1 = "        sq += x * x\n"
SECOND = seed()[seed().index("    rstd = 1.0"):seed().index("\n\ndef launch")]
FIRST = ("    for f in range(0, n_features):\n"
         "        x = tl.load(x_ptr + base + f * n_spatial + s, mask=mask, other=0.0).to(tl.float32)\n" + LOOP1)


def variant(*reps: tuple[str, str]) -> str:
    source = seed()
    for old, new in reps:
        assert old in source, old
        source = source.replace(old, new, 1)
    return source


@pytest.mark.parametrize("reps,reason", [
    # a running sum stored on every trip: all rows of a block would get the block's final sum
    ([(LOOP1, LOOP1 + "        tl.store(y_ptr + base + f * n_spatial + s, sq, mask=mask)\n"), (SECOND, "    pass")],
     "accumulator sq is read or assigned elsewhere"),
    ([(LOOP1, LOOP1 + "        sq = sq * 0.5\n")], "accumulator sq is read or assigned elsewhere"),
    ([(LOOP1, "        sq += x\n        sq = tl.maximum(sq, 0.0)\n")], "accumulator sq is read or assigned elsewhere"),
    # a recurrence through memory: a block would read rows before they are written
    ([(FIRST, "    for f in range(1, n_features):\n"
              "        p = tl.load(y_ptr + base + (f - 1) * n_spatial + s, mask=mask)\n"
              "        x = tl.load(x_ptr + base + f * n_spatial + s, mask=mask)\n"
              "        tl.store(y_ptr + base + f * n_spatial + s, p + x, mask=mask)\n"), (SECOND, "    pass")],
     "loads through y_ptr elsewhere than it stores"),
    # two indices of a block would write one place in no defined order
    ([("tl.store(y_ptr + base + f * n_spatial + s,", "tl.store(y_ptr + base + (f // 2) * n_spatial + s,")],
     "one place per index"),
    # a helper's reduction or store is not visible to the rewrite
    ([("@triton.jit\ndef rmsnorm_kernel", "@triton.jit\ndef _peak(v):\n    return tl.max(tl.abs(v), axis=0)\n\n\n"
                                          "@triton.jit\ndef rmsnorm_kernel"), (LOOP1, "        sq += x * x + _peak(x)\n")],
     "calls _peak"),
    ([("    for f in range(0, n_features):\n        x", "    for f in range(0, n_features):\n"
                                                      "        n_features = 3\n        x")],
     "which its range reads"),
])
def test_refuses_what_a_block_of_trips_would_change(reps, reason):
    assert reason in skip_reason("vectorize_loop", variant(*reps))


def test_a_kernel_with_2d_tiles_is_refused():
    """The new index goes in front of 1-D vectors; against a 2-D tile it would pair with its rows."""
    tiled = variant(("    sq = tl.zeros([BLOCK_S], dtype=tl.float32)",
                     "    sq = tl.zeros([BLOCK_S], dtype=tl.float32)\n    pad = tl.zeros([BLOCK_S, 2], dtype=tl.float32)"))
    assert "not 1-D" in skip_reason("vectorize_loop", tiled)


def test_low_precision_terms_are_summed_in_the_accumulator_type(tmp_path):
    """fp16 squares summed 16 at a time in fp16 overflow; the parent added each into fp32."""
    half = variant(("other=0.0).to(tl.float32)\n" + LOOP1, "other=0.0)\n" + LOOP1))
    x = (torch.randn((2, 16, 3, 5), generator=torch.Generator().manual_seed(3)) * 80).half()
    want, got = run_pair(half, apply("vectorize_loop", half), tmp_path, x, BLOCK_S=32)
    assert torch.isfinite(got.float()).all() and torch.allclose(want.float(), got.float(), rtol=1e-3, atol=1e-3)


def test_integer_max_accumulator_stays_exact(tmp_path):
    """Padded indices take the accumulator's own value, so an int32 max is never rounded through fp32."""
    source = variant(("    sq = tl.zeros([BLOCK_S], dtype=tl.float32)",
                      "    sq = tl.full([BLOCK_S], -2147483647, dtype=tl.int32)"),
                     ("other=0.0).to(tl.float32)\n" + LOOP1,
                      "other=0).to(tl.int32)\n        sq = tl.maximum(sq, x)\n"),
                     ("    rstd = 1.0 / tl.sqrt(sq / n_features + eps)", "    rstd = sq"))
    new = apply("vectorize_loop", source)
    assert "tl.where(f_mask, x, sq)" in new
    x = torch.randint(2**31 - 200, 2**31 - 1, (2, 7, 3, 5), generator=torch.Generator().manual_seed(3),
                      dtype=torch.int64).to(torch.int32)
    want, got = run_pair(source, new, tmp_path, x, BLOCK_S=32)
    assert torch.equal(want, got)
