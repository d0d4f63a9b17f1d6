"""The error band reaches the user-facing outputs: export header, summary.json, bench report."""

from kernelfoundry import REPO_DIR, export
from kernelfoundry.bench_report import _model_error_table
from kernelfoundry.search.loop import _model_error
from kernelfoundry.task import load_task

from tests.core.test_plot_export import make_run


def test_export_header_quotes_the_band(tmp_path):
    run_dir = make_run(tmp_path)
    out = tmp_path / "kernels"
    assert export.main([str(run_dir), "--out", str(out), "--top", "1"]) == 0
    text = next(p for p in sorted(out.glob("*.py")) if p.name != "bench_elites.py").read_text()
    header = text.split("\n\n")[0]
    assert "model predictions, not measurements" in header
    assert "(predicted; model error on" in header and "±" in header and "eager estimate" in header


def test_summary_and_bench_report_carry_the_band(tmp_path):
    task = load_task(REPO_DIR / "experiments" / "tasks" / "softmax.yaml")
    summary = _model_error(task, ["h100", "ascend910b2"])
    assert summary["op_kind"] == "softmax" and set(summary["hardware"]) == {"h100", "ascend910b2"}
    assert summary["hardware"]["h100"]["eager"]["kind"] == "softmax" and "±" in summary["hardware"]["h100"]["note"]
    run_dir = make_run(tmp_path)
    table = _model_error_table([{"task": "softmax", "run_dir": str(run_dir)},
                                {"task": "gone", "run_dir": str(tmp_path / "missing")}])
    assert table[2].startswith("| softmax | softmax | h100 | model error on") and len(table) == 3
