"""Dense programs: every sampled program runs every loop trip, and its own count corrects what its
sparse trip samples missed (work on rare trips), in every program separately."""

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

from pathlib import Path

import pytest

from kernelfoundry.evaluate.inprocess import trace_trusted
from kernelfoundry.evaluate.trace.counts import DenseLift, ProgramCounts
from kernelfoundry.task import task_from_dict

KERNELS = Path(__file__).resolve().parent / "kernels"
ROWS, BLOCKS, BLOCK = 64, 128, 32
RARE = task_from_dict({
    "name": "rare", "reference": "import torch\ndef reference(x):\n    return x.view(-1, %d, %d).sum(1)\n" % (BLOCKS, BLOCK),
    "inputs": {"x": {"shape": ["R", BLOCKS * BLOCK], "dtype": "float32"}},
    "shapes": {"check": [{"R": 2}], "target": [{"R": ROWS}]},
    "tolerance": {"atol": 1e-4, "rtol": 1e-4}, "seeds": [str(KERNELS / "rare_heavy_trips.py")]})


def test_dense_lift_corrects_what_the_sparse_samples_missed():
    def counts(load, flops, reduction):
        c = ProgramCounts(1)
        c.traffic[0, 0] = load          # load bytes
        c.traffic[0, 2] = load / 32     # load sectors
        c.traffic[0, 4] = load          # distinct load bytes
        c.dot_flops["fp32"] = flops
        c.ops["reduction"] = reduction
        return c

    full, sparse_view = counts(200.0, 100.0, 50.0), counts(100.0, 125.0, 0.0)
    lift = DenseLift(full, sparse_view)
    lift.apply(sparse_view)
    assert list(sparse_view.traffic[0, [0, 2, 4]]) == [200.0, 200.0 / 32, 200.0]   # half sat on unsampled trips
    assert sparse_view.dot_flops["fp32"] == pytest.approx(100.0)   # a heavy sampled trip over-weighted: down
    assert sparse_view.ops["reduction"] == 50.0           # none sampled at all: raised by the full count
    assert lift.lifted
    same = DenseLift(counts(100.0, 95.0, 0.0), counts(100.0, 95.0, 0.0))
    untouched = counts(100.0, 95.0, 0.0)
    same.apply(untouched)
    assert untouched.traffic[0, 0] == 100.0 and not same.lifted


@pytest.mark.parametrize("seed", [3, 11])
def test_work_on_rare_trips_is_counted(seed):
    # every 16th trip of a 128-trip loop loads the 16 blocks of its group; the others load nothing
    gate, (trace,) = trace_trusted((KERNELS / "rare_heavy_trips.py").read_text(), RARE, [{"BLOCK": BLOCK}],
                                   seed=seed, trace_programs=4, timeout=60.0)
    assert gate.passed, gate.reason
    (launch,) = trace.launches
    assert launch.traffic["x_ptr"].load_bytes == pytest.approx(BLOCKS * BLOCK * 4, rel=0.01)


@pytest.mark.parametrize("seed", [3, 11, 19])
def test_work_on_rare_trips_of_some_programs_only_is_counted(seed):
    # even rows: one block per trip; odd rows: all their blocks on one trip in 16.  Each sampled
    # program is counted from its own dense run, so whichever programs are sampled, all work shows
    gate, (trace,) = trace_trusted((KERNELS / "parity_rare_trips.py").read_text(), RARE, [{"BLOCK": BLOCK}],
                                   seed=seed, trace_programs=4, timeout=60.0)
    assert gate.passed, gate.reason
    (launch,) = trace.launches
    assert launch.traffic["x_ptr"].load_bytes == pytest.approx(BLOCKS * BLOCK * 4, rel=0.01)   # per program


@pytest.mark.parametrize("seed", [3, 11])
def test_a_program_run_again_finds_the_memory_its_first_run_found(seed):
    # a program whose sparse counts differ from the lead's is run again densely; a flag it set in its
    # first run would make the second run idle, so the trace puts back what the first run wrote
    gate, (trace,) = trace_trusted((KERNELS / "rerun_state.py").read_text(), RARE, [{"BLOCK": BLOCK}],
                                   seed=seed, trace_programs=4, timeout=60.0)
    assert gate.passed, gate.reason
    (launch,) = trace.launches
    assert launch.traffic["x_ptr"].load_bytes == pytest.approx(BLOCKS * BLOCK * 4, rel=0.01)   # per program


def test_a_rerun_is_the_same_work_when_only_its_sectors_moved():
    from kernelfoundry.evaluate.trace.counts import same_counts, same_work

    def counts(load, distinct, flops=64.0):
        c = ProgramCounts(1)
        c.traffic[0, 0], c.traffic[0, 2], c.traffic[0, 4] = load, load / 32, distinct
        c.dot_flops["fp16"] = flops
        return c
    sparse, dense = counts(1024.0, 640.0), counts(1024.0, 800.0)
    assert not same_counts(sparse, dense) and same_work(sparse, dense)     # sectors moved, work did not
    assert not same_work(sparse, counts(2048.0, 640.0))                    # more bytes: other work
    assert not same_work(sparse, counts(1024.0, 640.0, flops=128.0))       # more dot flops: other work


@pytest.mark.slow
def test_a_gemm_whose_last_k_block_is_ragged_passes_its_trace():
    """K = 1000 with BLOCK_K = 32: the last trip loads 8 of 32 columns, and A's 2,000-byte rows straddle
    sectors. A sparse run advances ``a_ptrs`` only on the trips it runs, so its late trips read other
    columns than the dense run's and touch other sectors: the same work, other sectors. The trace
    refused this honest kernel ("did different work when the trace ran it again")."""
    repo = Path(__file__).resolve().parents[2]
    tutorial = repo / "experiments" / "fidelity" / "triton_tutorial"
    source = (tutorial / "matmul.py").read_text()
    start = source.index('    "TILE": [')
    end = source.index('    "GROUP_SIZE_M"')
    source = source[:start] + '    "TILE": ["128x64x32"],\n' + source[end:]
    source = source.replace('"num_warps": [8, 4, 2]', '"num_warps": [4]').replace('"num_stages": [3, 4, 5]',
                                                                                    '"num_stages": [3]')
    task = task_from_dict({
        "name": "ragged_k", "reference": "import torch\ndef reference(a, b):\n    return a @ b\n",
        "inputs": {"a": {"shape": ["M", "K"], "dtype": "float16"}, "b": {"shape": ["K", "N"], "dtype": "float16"}},
        "shapes": {"check": [{"M": 64, "N": 48, "K": 80}], "target": [{"M": 1024, "N": 1024, "K": 1000}]},
        "tolerance": {"atol": 2e-2, "rtol": 2e-2}, "seeds": [str(tutorial / "matmul.py")]})
    gate, traces = trace_trusted(source, task, timeout=300)
    assert gate.passed, gate.reason
    assert traces and traces[0].launches[0].dot_flops and sum(traces[0].launches[0].dot_flops.values()) > 0
