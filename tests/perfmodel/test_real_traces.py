"""Score real traces of the seed kernels (the verifier's tracer, run in-process on trusted seeds)."""

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from kernelfoundry.candidate import HINT_PARAMS, kernel_configs, parse_param_space  # noqa: E402
from kernelfoundry.evaluate.inprocess import trace_trusted  # noqa: E402
from kernelfoundry.perfmodel.score import score_candidate  # noqa: E402
from kernelfoundry.task import load_task  # noqa: E402

TASKS = Path(__file__).resolve().parents[2] / "experiments" / "tasks"


def _score(task_file):
    task = load_task(TASKS / task_file)
    source = task.seeds[0].read_text()
    space = parse_param_space(source)
    hints = {n: space[n][0] for n in HINT_PARAMS if n in space}
    gate, traces = trace_trusted(source, task, kernel_configs(space, cap=8), hints=hints, seed=0,
                                 trace_programs=4, timeout=120.0)
    assert gate.passed, gate.reason
    return task, traces, score_candidate(task, traces, space, list(task.hardware))


def test_naive_softmax_seed_is_dram_bound_and_rereads_rows():
    task, traces, r = _score("softmax.yaml")
    assert r.objective is not None and 0 < r.objective < 2
    h100 = r.hardware["h100"].per_shape[0]
    assert h100["bound"] == "dram" and h100["latency_s"] > h100["sol_s"]
    assert "re-read" in r.feedback


def test_naive_matmul_seed_prefers_larger_tiles():
    task, traces, r = _score("matmul.yaml")
    assert r.objective is not None and r.objective > 0
    best = r.hardware["h100"].best_params
    assert best["BLOCK_M"] == 32 and best["BLOCK_N"] == 32
    assert r.hardware["h100"].sol_fraction < 0.5            # 32x32 tiles are far from the matrix peak
