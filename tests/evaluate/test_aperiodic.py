"""Target-shape trace inputs are one tile mapped again and again; the trace reads them without a period."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

import numpy as np
import pytest
import torch

from kernelfoundry.evaluate.child.aperiodic import CHUNK, AperiodicInputs
from kernelfoundry.evaluate.inprocess import trace_trusted
from kernelfoundry.harness.tiled import filled_input
from kernelfoundry.task import task_from_dict

ROWS, COLS = 4096, 2048            # 32 MB of fp32: tiled; a 2 MB tile holds 256 rows


def test_rewritten_loads_agree_with_each_other_keep_the_tiles_values_and_do_not_repeat():
    x, mapping = filled_input((ROWS, COLS), torch.float32, lambda n: torch.randn(n, generator=torch.Generator().manual_seed(0)))
    assert mapping is not None and mapping.tile is not None
    period = mapping.tile.size // 4 // COLS
    assert torch.equal(x[0], x[period])                       # memory repeats: the tile's period
    view = AperiodicInputs.of([x], [mapping.tile], seed=0)
    base = x.data_ptr()

    def load(row, cols):
        ptrs = np.array([base + (row * COLS + c) * 4 for c in cols], dtype=np.uint64)
        data = np.zeros(len(cols), dtype=np.float32)
        view.rewrite(ptrs, None, data, 4)
        return data

    cols = list(range(64))
    a, b, again = load(0, cols), load(period, cols), load(0, cols)
    assert np.array_equal(a, again)                          # every read of an address agrees
    assert not np.array_equal(a, b)                          # rows one period apart differ
    assert set(np.round(a, 6)) <= set(np.round(mapping.tile.view(np.float32), 6))   # values from the tile
    # a narrower, misaligned view of the same bytes reads the same bytes
    half = np.zeros(2, dtype=np.float16)
    view.rewrite(np.array([base + 2, base + 4], dtype=np.uint64), None, half, 2)
    assert half.view(np.uint8).tobytes() == a.view(np.uint8).tobytes()[2:6]
    assert CHUNK == 64
    # masked-off lanes keep what the load gave them
    data = np.full(2, 7.0, dtype=np.float32)
    view.rewrite(np.array([base, base + 4], dtype=np.uint64), np.array([False, True]), data, 4)
    assert data[0] == 7.0 and data[1] == a[1]
    # a write materialises the chunks it touches first: what is written reads back, on top of the values
    # the kernel read, and writing (an atomic add of 0, say) reveals nothing of the period
    for row in (0, period):
        view.wrote(np.array([base + row * COLS * 4], dtype=np.uint64), None, 4)
    x[period, 0] = 5.0                                       # the kernel's write, after the hook
    data = x.reshape(-1)[[0, period * COLS]].numpy().copy()     # the load reads memory, then the rewrite
    view.rewrite(np.array([base, base + period * COLS * 4], dtype=np.uint64), None, data, 4)
    assert data[0] == a[0] and data[1] == 5.0                # row 0 reads memory: its hashed value
    assert not torch.equal(x[0, :16], x[period, :16])         # memory no longer repeats there
    data = x[0, :16].numpy().copy()
    view.rewrite(np.array([base + c * 4 for c in range(16)], dtype=np.uint64), None, data, 4)
    assert np.array_equal(data, a[:16]) and torch.equal(x[0, :16], torch.from_numpy(a[:16]))
    mapping.release()


PERIOD_PROBE = '''
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [256]}


@triton.jit
def scale_rows(x_ptr, y_ptr, R, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    probe = tl.arange(0, 64)
    here = tl.load(x_ptr + row * N + probe)
    there = tl.load(x_ptr + ((row + 256) % R) * N + probe)
    same = tl.sum((here == there).to(tl.int32), axis=0)
    trips = tl.where(same == 64, 1, tl.cdiv(N, BLOCK))
    for t in range(0, trips):
        cols = t * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + row * N + cols, v * 2.0, mask=cols < N)


def launch(x, *, BLOCK):
    y = torch.empty_like(x)
    scale_rows[(x.shape[0],)](x, y, x.shape[0], x.shape[1], BLOCK=BLOCK)
    return y
'''


@pytest.mark.parametrize("unlock", [False, True])
def test_a_kernel_that_looks_for_the_tiles_period_does_its_full_work_in_the_trace(unlock):
    """The probe compares a row with the row 256 below it (one 2 MB tile of fp32 at 2048 columns):
    equal only in a periodic trace input, where it would run one trip of its 8.  *unlock*: it first
    adds 0 to the probed elements with atomics (writing into an input used to turn the rewrite off)."""
    source = PERIOD_PROBE if not unlock else PERIOD_PROBE.replace(
        "    here = tl.load(", "    tl.atomic_add(x_ptr + row * N + probe, 0.0)\n"
        "    tl.atomic_add(x_ptr + ((row + 256) % R) * N + probe, 0.0)\n    here = tl.load(")
    assert ("atomic_add" in source) == unlock
    task = task_from_dict({
        "name": "scale_rows", "reference": "import torch\ndef reference(x):\n    return x * 2\n",
        "inputs": {"x": {"shape": ["R", "N"], "dtype": "float32"}},
        "shapes": {"check": [{"R": 300, "N": 2048}], "target": [{"R": ROWS, "N": COLS}]},
        "tolerance": {"atol": 1e-6, "rtol": 1e-6}, "seeds": [__file__]})
    gate, traces = trace_trusted(source, task)
    assert gate.passed, gate.reason
    launch = traces[0].launches[0]
    assert launch.loop_trips == COLS // 256                  # every traced program ran all its trips
