"""The target launch's outputs: what programs run in full wrote, checked against the reference there."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

from pathlib import Path

import numpy as np
import pytest
import torch

from kernelfoundry.evaluate.child.aperiodic import AperiodicInputs
from kernelfoundry.evaluate.child.program_outputs import loops_complete
from kernelfoundry.evaluate.judge.separable import separable_symbols
from kernelfoundry.evaluate.judge.target_outputs import check_target_outputs
from kernelfoundry.evaluate.judge.trace_values import trace_input_values
from kernelfoundry.harness.inputs import trace_inputs
from kernelfoundry.harness.tiled import release_all
from kernelfoundry.sandbox import BlobReader, BlobWriter
from kernelfoundry.task import load_task

TASKS = Path(__file__).resolve().parents[2] / "experiments" / "tasks"
MATMUL = load_task(TASKS / "matmul.yaml")
ENV = dict(MATMUL.target_shapes[0])          # 4096^3 fp16: 32 MB inputs, tiled


def test_the_judge_draws_the_values_the_traces_loads_read():
    """Tiled inputs read through the aperiodic hash, in the child and in the judge alike."""
    inputs, mappings = trace_inputs(MATMUL, ENV, seed=7)
    try:
        assert all(m is not None for m in mappings)
        view = AperiodicInputs.of(inputs, [m.tile for m in mappings], seed=7)
        flat = np.random.default_rng(0).integers(0, inputs[1].numel(), 500)
        ptrs = (inputs[1].data_ptr() + flat * 2).astype(np.uint64)
        loaded = np.zeros(flat.size, dtype=np.float16)
        view.rewrite(ptrs, None, loaded, 2)
        drawn = trace_input_values(MATMUL, ENV, 7, 1, flat)
        assert drawn.dtype == torch.float16 and np.array_equal(drawn.numpy(), loaded)
        assert not np.array_equal(trace_input_values(MATMUL, ENV, 8, 1, flat).numpy(), loaded)   # the seed counts
    finally:
        release_all(mappings)


def test_separable_symbols_are_found_from_the_reference_itself():
    found = {name: separable_symbols(load_task(TASKS / f"{name}.yaml"))
             for name in ("matmul", "softmax", "layernorm", "transpose", "cross_entropy", "sum_dim")}
    assert found["matmul"] == {"M": ((0,),), "N": ((1,),)}
    assert found["softmax"] == {"M": ((0,),)}                       # rows; never the row length
    assert found["layernorm"] == {"B": ((0,),)}                     # the normalised dims mix
    assert found["transpose"] == {"M": ((1,),), "N": ((0,),)}
    assert found["cross_entropy"] == {}                             # a mean over the batch: one scalar
    assert found["sum_dim"] == {"B": ((0,),), "N": ((2,),)}         # the reduced R is not


def _record(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, **program) -> tuple[dict, BlobReader]:
    """A trace record whose one program stored *values* at C[rows x cols] of the matmul target."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"kf-target-outputs-{os.getpid()}.bin"
    writer = BlobWriter(path)
    index = (rows[:, None] * ENV["N"] + cols[None, :]).reshape(-1).astype(np.int64)
    entry = {"output": 0, "shape": [ENV["M"], ENV["N"]], "dtype": "float16", "index": writer.put(index),
             "values": writer.put(values.astype(np.float16).reshape(-1).view(np.uint8))}
    writer.close()
    blob = BlobReader(path.read_bytes())
    path.unlink()
    checked = dict({"pid": 300, "complete": True, "reads_produced": [], "atomics_shared": [],
                    "stored": ["output:0"], "outputs": [entry]}, **program)
    record = {"shape_index": 0, "config": {"BLOCK_M": 16}, "tiled_inputs": [True, True],
              "launches": [{"kernel": "matmul_kernel", "num_programs": 65536, "checked_programs": [checked]}]}
    return record, blob


def _honest(rows: np.ndarray, cols: np.ndarray, seed: int) -> np.ndarray:
    """C[rows x cols] computed from the trace's own A rows and B columns (fp32 accumulation)."""
    K, N = ENV["K"], ENV["N"]
    a = trace_input_values(MATMUL, ENV, seed, 0, (rows[:, None] * K + np.arange(K)).reshape(-1)).reshape(len(rows), K)
    b = trace_input_values(MATMUL, ENV, seed, 1, (np.arange(K)[:, None] * N + cols).reshape(-1)).reshape(K, len(cols))
    return (a.float() @ b.float()).half().numpy()


def test_right_elements_pass_wrong_ones_fail_and_unreadable_programs_are_counted_not_compared():
    rows, cols, seed = np.arange(1024, 1040), np.arange(2048, 2064), 3
    right = _honest(rows, cols, seed)
    record, blob = _record(rows, cols, right)
    why, stats = check_target_outputs(MATMUL, seed, [record], blob)
    assert why is None and stats["programs"] == 1 and stats["elements"] == 256
    half_k = right.astype(np.float32) * 0.5                        # a K loop cut in half, as it were
    record, blob = _record(rows, cols, half_k)
    why, _ = check_target_outputs(MATMUL, seed, [record], blob)
    assert why is not None and "program 300 of matmul_kernel" in why and "target shape" in why
    one_wrong = right.copy()
    one_wrong[5, 9] += 40.0
    record, blob = _record(rows, cols, one_wrong)
    why, _ = check_target_outputs(MATMUL, seed, [record], blob)
    assert why is not None and "1 of 256 elements differ" in why
    # the same wrong values, where the judge cannot know what is right: skipped, and said so
    for program, reason in (({"complete": False}, "loops sampled"),
                            ({"atomics_shared": ["output:0"]}, "atomics into an output or a storage read back"),
                            ({"reads_produced": ["scratch"]}, "reads what an earlier launch wrote"),
                            ({"stored": ["output:0", "input:1"]}, "writes an input")):
        record, blob = _record(rows, cols, half_k, **program)
        why, stats = check_target_outputs(MATMUL, seed, [record], blob)
        assert why is None and stats["skipped"] == {reason: 1} and stats["elements"] == 0
    # a later launch given the output may still change it (a second pass normalising in place): not final
    record, blob = _record(rows, cols, half_k)
    record["launches"].append({"kernel": "rescale", "num_programs": 4, "checked_programs": [],
                               "tensors": [{"role": "output:0"}, {"role": "scratch"}]})
    why, stats = check_target_outputs(MATMUL, seed, [record], blob)
    assert why is None and stats["skipped"] == {"a later launch takes the output": 1} and stats["programs"] == 0
    record["launches"][-1]["tensors"] = [{"role": "input:0"}, {"role": "scratch"}]    # output untouched: compared
    why, _ = check_target_outputs(MATMUL, seed, [record], blob)
    assert why is not None and "program 300 of matmul_kernel" in why


def test_a_program_is_complete_only_when_every_for_loop_ran_every_trip():
    assert loops_complete([["k:3", "for", 4, 0, [0, 1, 2, 3], []], ["k:9", "while", 7, 0, [], []]])
    assert not loops_complete([["k:3", "for", 2000, 0, list(range(1024)), [0, 1]]])
