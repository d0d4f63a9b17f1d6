"""The exported bench_elites.py: no GPU -> exit 2; its table and CSV (fake timer), which calibrate reads."""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelfoundry.calibrate.rows import CSV_COLUMNS, read_rows
from kernelfoundry.measure.export_bench import BENCH_SCRIPT, bench_spec, render_bench
from kernelfoundry.perfmodel.hardware import load_hardware
from kernelfoundry.task import load_task

REPO = Path(__file__).resolve().parents[2]
PREDICTED = 1.5e-3


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("export")
    shutil.copy(REPO / "experiments/tasks/kernels/relu_naive.py", out / "relu_01_c3.py")
    scores = {"h100": {"best_params": {"BLOCK": 512, "num_warps": 4, "num_stages": 1},
                       "per_shape": [{"latency_s": PREDICTED, "bound": "dram", "breakdown": {"launch": 6e-6},
                                      "best_params": {"BLOCK": 512, "num_warps": 4, "num_stages": 1}}]}}
    spec = bench_spec(load_task(REPO / "experiments/tasks/relu.yaml"), "h100", [("relu_01_c3.py", scores)])
    (out / BENCH_SCRIPT).write_text(render_bench(spec))
    return out


def run(export_dir, *args, fake=None):
    env = {k: v for k, v in os.environ.items() if k not in ("KF_BENCH_FAKE", "TRITON_INTERPRET")}
    if fake:
        env["KF_BENCH_FAKE"] = fake
    return subprocess.run([sys.executable, BENCH_SCRIPT, *args], cwd=export_dir, env=env, capture_output=True,
                          text=True, timeout=300)


def test_without_gpu_it_says_so_and_exits_2(export_dir):
    proc = run(export_dir)
    assert proc.returncode == 2 and "no GPU here" in proc.stderr


def test_fake_run_writes_a_csv_calibrate_reads(export_dir):
    proc = run(export_dir, "--shapes", "target", "--out", "m.csv", fake="1.3")
    assert proc.returncode == 0, proc.stderr
    assert "relu_01_c3.py" in proc.stdout and "WRONG" not in proc.stdout
    with open(export_dir / "m.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(CSV_COLUMNS)
    kernel, eager = rows
    assert kernel["row"] == "kernel" and kernel["correct"] == "True"
    assert float(kernel["measured_s"]) == pytest.approx(1.3 * PREDICTED)
    assert json.loads(kernel["config"])["BLOCK"] == 512
    assert eager["row"] == "eager" and "torch.relu" in eager["reference"]
    spec = load_hardware("h100")
    measured, device = read_rows(export_dir / "m.csv", spec)
    assert device == "fake (CPU interpreter)" and len(measured) == 2
    assert measured[0].predict(spec) == pytest.approx(PREDICTED)
    assert measured[1].predict(spec) == pytest.approx(float(eager["predicted_s"]))


def test_unknown_kernel_is_refused(export_dir):
    proc = run(export_dir, "--kernels", "nope.py", fake="1.0")
    assert proc.returncode == 2 and "nope.py" in proc.stderr
