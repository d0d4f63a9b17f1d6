"""``python -m kernelfoundry.verify``: exit codes, text and JSON output, usage errors."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelfoundry.records import VerifyResult
from kernelfoundry.verify import format_text, main

REPO = Path(__file__).resolve().parents[1]
SOFTMAX = str(REPO / "experiments" / "tasks" / "softmax.yaml")
SEED = str(REPO / "experiments" / "tasks" / "kernels" / "softmax_naive.py")
HAS_MODEL = importlib.util.find_spec("kernelfoundry.perfmodel.score") is not None


def test_help_describes_the_gates(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for word in ("--json", "--hardware", "--timeout", "correctness", "sandbox", "examples", "--asm",
                 "--no-compile", "compile"):
        assert word in out


@pytest.mark.parametrize("argv,text", [
    ([SOFTMAX, "no/such/kernel.py"], "kernel file no/such/kernel.py does not exist"),
    (["no/such/task.yaml", SEED], "task file no/such/task.yaml does not exist"),
    ([SOFTMAX, SEED, "--hardware", "h100,warp9"], "unknown hardware 'warp9'"),
    ([SOFTMAX, SEED, "--hardware", " , "], "--hardware is empty"),
    ([SOFTMAX, SEED, "--timeout", "0"], "--timeout must be a positive number"),
])
def test_usage_errors_exit_2_with_one_message(capsys, argv, text):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and text in err
    assert "Traceback" not in err


def test_bad_task_field_names_file_and_field(tmp_path, capsys):
    task = tmp_path / "bad.yaml"
    task.write_text(Path(SOFTMAX).read_text().replace("level: 1", "level: 7"))
    assert main([str(task), SEED]) == 2
    err = capsys.readouterr().err
    assert str(task) in err and "'level'" in err


def test_refused_kernel_exits_1_with_json(tmp_path, capsys):
    kernel = tmp_path / "hostile.py"
    kernel.write_text("import subprocess\n" + Path(SEED).read_text())
    task = tmp_path / "softmax.yaml"                  # a copy whose seed kernels are not beside it: verify
    task.write_text(Path(SOFTMAX).read_text())        # does not need them
    assert main([str(task), str(kernel), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] is False and out["gate"] == "hack"
    assert "`import subprocess` is not allowed" in out["reason"]
    assert out["descriptors"] is None and out["objective"] is None and out["hardware"] == {}
    assert out["kernel"] == str(kernel) and out["task"] == "softmax"


def test_seed_through_the_real_command():
    """One real subprocess run of the command on the softmax seed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-m", "kernelfoundry.verify", SOFTMAX, SEED, "--json",
                           "--hardware", "h100,ascend910b2"], capture_output=True, text=True, env=env,
                          timeout=300, cwd=REPO)
    out = json.loads(proc.stdout)
    assert [g["name"] for g in out["gates"]][:4] == ["hack", "load", "correctness", "trace"], out["reason"]
    if not HAS_MODEL:
        assert proc.returncode == 1 and out["gate"] == "model"
        return
    assert proc.returncode == 0 and out["passed"] is True and out["gate"] is None, out["reason"]
    assert set(out["descriptors"]) == {"tiling", "memory_pattern"}
    assert out["objective"] > 0
    for name in ("h100", "ascend910b2"):
        hw = out["hardware"][name]
        assert hw["latency_s"] > 0 and 0 < hw["sol_fraction"] <= 1 and "BLOCK_N" in hw["best_params"]
        assert hw["model_error"].startswith("predicted; model error on ")     # how far to trust the number
    assert "registers" in out["hardware"]["h100"]["compiled"] and out["hardware"]["ascend910b2"]["compiled"] == ""
    assert [g["name"] for g in out["gates"]][-3:] == ["model", "compile", "confirm"]
    text = format_text(VerifyResult.from_dict(out), task_name="softmax", kernel=SEED)
    for part in ("hack", "correctness", "descriptors: tiling", "objective:", "ascend910b2", "speed-of-light",
                 "best BLOCK_N=", "PASSED"):
        assert part in text
