"""The evolve command as a user meets it: bad input is refused with exit 2 and a message
naming the problem, and a driver killed with SIGKILL loses only the candidates in flight."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.evolve import main

RELU = REPO_DIR / "experiments/tasks/relu.yaml"


def test_bad_task_field_is_named_and_nothing_is_started(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(RELU.read_text().replace("level: 1", "level: seven"))
    assert main([str(bad), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "level" in err and "bad.yaml" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("argv, message", [
    (["--hardware", "h100,tpu9"], "tpu9"),
    (["--budget", "0"], "--budget"),
    (["--workers", "-1"], "--workers"),
    (["--max-cost", "-2"], "--max-cost"),
    (["--max-kernel-configs", "0"], "--max-kernel-configs"),
    (["--routing", "smart"], "--routing must be fixed or adaptive"),
    (["--max-llm-seconds", "0"], "--max-llm-seconds"),
    (["--model", "sim/genius"], "unknown sim profile 'genius'"),
    (["--resume", "elsewhere"], "a resumed run stays in its own directory"),
])
def test_bad_options_exit_2_with_the_reason(tmp_path, capsys, argv, message):
    assert main([str(RELU), "--out", str(tmp_path / "run"), *argv]) == 2
    assert message in capsys.readouterr().err


def test_unknown_hardware_in_the_task_file_names_the_file_and_field(tmp_path, capsys):
    task = tmp_path / "relu.yaml"
    task.write_text(RELU.read_text().replace("hardware: [h100, a100, ascend910b2]", "hardware: [h100, tpu9]")
                    .replace("kernels/relu_naive.py", str(RELU.parent / "kernels/relu_naive.py")))
    assert main([str(task), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"task file {task}, field 'hardware'" in err and "tpu9" in err
    assert not (tmp_path / "run").exists()


def test_missing_task_and_resume_of_a_non_run(tmp_path, capsys):
    assert main([str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err
    assert main(["--resume", str(tmp_path)]) == 2
    assert str(tmp_path) in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    (b"garbage, not a database", "is damaged or is not a run store"),
    (b"", "holds no task: the run was stopped while it was being created"),
])
def test_damaged_or_empty_run_store_is_named(tmp_path, capsys, content, message):
    from kernelfoundry import export, plot
    (tmp_path / "run.sqlite").write_bytes(content)
    for command in (lambda: main(["--resume", str(tmp_path), "--quiet"]), lambda: plot.main([str(tmp_path)]),
                    lambda: export.main([str(tmp_path)])):
        assert command() == 2
        err = capsys.readouterr().err
        assert message in err and str(tmp_path / "run.sqlite") in err


def _rows(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT id, source, passed, objective FROM candidates ORDER BY id").fetchall()
    except sqlite3.OperationalError:        # the file exists, its tables are not created yet
        return []
    finally:
        conn.close()


#: runs a module as __main__ with Python's own SIGINT handler: a shell that starts pytest in the
#: background makes SIGINT ignored, children inherit that, and an ignored Ctrl-C is not this test's subject
RUN_WITH_SIGINT = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                   "sys.argv = sys.argv[1:]; runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)")


def _signal_after_rows(run_dir: Path, rows: int, sig: int) -> tuple[int, str]:
    """Start `evolve relu --budget 40` in a subprocess, send *sig* to the driver once *rows* candidates are
    stored; return its exit code and stderr."""
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR))
    cmd = [sys.executable, "-c", RUN_WITH_SIGINT, "kernelfoundry.evolve", str(RELU), "--budget", "40",
           "--workers", "1", "--out", str(run_dir), "--quiet"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    db = run_dir / "run.sqlite"
    deadline = time.time() + 240
    try:
        while time.time() < deadline and proc.poll() is None:
            if db.exists() and len(_rows(db)) >= rows:
                break
            time.sleep(0.3)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        os.kill(proc.pid, sig)                   # the driver only, as `kill -9 PID` or Ctrl-C do
        try:
            rc = proc.wait(timeout=150)
        except subprocess.TimeoutExpired:        # say where the driver was (seen twice in full-suite runs)
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"the driver did not exit within 150 s of signal {sig}; its stderr:\n"
                                 + proc.stderr.read().decode()[-4000:]) from None
        return rc, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_sigkill_loses_only_in_flight_and_resume_finishes(tmp_path, ray_local, capsys):
    run_dir = tmp_path / "run"
    _signal_after_rows(run_dir, 3, signal.SIGKILL)
    db = run_dir / "run.sqlite"
    before = _rows(db)
    assert 3 <= len(before) < 40
    assert [r[0] for r in before] == list(range(len(before)))

    budget = len(before) + 2
    # a resume keeps the run's settings: other values are refused (the same ones are fine)
    assert main(["--resume", str(run_dir), "--budget", str(budget), "--strategy", "greedy", "--seed", "0"]) == 2
    err = capsys.readouterr().err
    assert "--strategy 'greedy' (the run has 'map-elites')" in err and "--seed" not in err.split("otherwise:")[1]
    assert main(["--resume", str(run_dir), "--budget", str(budget), "--seed", "0", "--quiet"]) == 0
    after = _rows(db)
    assert len(after) == budget and after[:len(before)] == before


def test_ctrl_c_exits_130_naming_the_run_and_a_run_killed_before_its_seeds_resumes(tmp_path, ray_local):
    run_dir = tmp_path / "run"
    rc, err = _signal_after_rows(run_dir, 2, signal.SIGINT)
    assert rc == 130, err[-3000:]
    assert f"continue with --resume {run_dir}" in err and "Traceback" not in err
    assert json.loads((run_dir / "summary.json").read_text())["finished"] is False
    # as if killed before its seed was stored: the resume evaluates the seed (kept in the run) and goes on
    db = run_dir / "run.sqlite"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM candidates")
    conn.close()
    assert main(["--resume", str(run_dir), "--budget", "3", "--quiet"]) == 0
    after = _rows(db)
    assert len(after) == 3 and after[0][1] == RELU.parent.joinpath("kernels/relu_naive.py").read_text()


def test_a_run_in_use_is_not_resumed_twice(tmp_path, capsys):
    import fcntl
    from kernelfoundry.store import RunStore
    RunStore(tmp_path / "run.sqlite").close()
    holder = os.open(tmp_path / ".lock", os.O_RDWR | os.O_CREAT)
    os.write(holder, b"4242")
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)         # another session holds the run
    try:
        assert main(["--resume", str(tmp_path), "--quiet"]) == 2
        assert "is in use by another evolve session (pid 4242)" in capsys.readouterr().err
    finally:
        os.close(holder)
    # once it is free, the same command gets past the lock (to the next problem: this store has no task)
    assert main(["--resume", str(tmp_path), "--quiet"]) == 2
    assert "holds no task" in capsys.readouterr().err


def test_printed_summary_says_the_objective_is_a_prediction_and_how_far_to_trust_it(capsys, tmp_path):
    from kernelfoundry.evolve import print_summary
    summary = {"task": "softmax", "n_candidates": 2, "n_correct": 2, "best_objective": 1.1, "best_candidate_id": 1,
               "num_elites": 1, "coverage": 0.01, "qd_score": 1.1, "gate_failures": {},
               "llm": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0},
               "hardware": ["h100"], "wall_seconds": 1.0,
               "model_error": {"hardware": {"h100": {"note": "predicted; model error on 25 published measurements: ±14%"}}}}
    print_summary(summary, tmp_path)
    out = capsys.readouterr().out
    assert "model (h100)" in out and "predicted; model error on 25 published measurements: ±14%" in out
