"""experiments/bench_perfmodel.py --smoke runs and prints its two tables."""

import importlib.util

from kernelfoundry import REPO_DIR


def test_bench_perfmodel_smoke(capsys):
    spec = importlib.util.spec_from_file_location("bench_perfmodel", REPO_DIR / "experiments" / "bench_perfmodel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "model core only (evaluate)" in out and "| h100 | copy | 3 TB/s |" in out
