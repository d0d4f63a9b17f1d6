"""The op-kind classifier against the datasets' kinds; held-out error bands and "unvalidated"."""

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.fidelity import band_note, error_band, op_kind
from kernelfoundry.fidelity.bands import load_table
from kernelfoundry.fidelity.dataset import load_dataset
from kernelfoundry.fidelity.opkind import KINDS, classify
from kernelfoundry.perfmodel.baseline import profile_function
from kernelfoundry.task import load_task

from .common import FIDELITY_DIR


def test_classifier_agrees_with_the_eager_datasets():
    for name in ("kernelbench_h100", "liger_a100_eager", "liger_h100nvl_eager", "triton_tutorial_a100_eager"):
        ds = load_dataset(FIDELITY_DIR / f"{name}.yaml")
        wrong = [(r.id, r.kind, k) for r in ds.rows
                 if (k := classify(profile_function(r.reference, list(r.inputs)))) != r.kind]
        assert len(wrong) <= 0.05 * len(ds.rows), wrong
        assert {r.kind for r in ds.rows} <= set(KINDS)


def test_project_tasks_get_their_kinds():
    tasks = REPO_DIR / "experiments" / "tasks"
    want = {"softmax": "softmax", "layernorm": "norm", "matmul": "matmul", "matmul_bias_relu": "gemm+epilogue",
            "cumsum": "scan", "cross_entropy": "loss", "sum_dim": "reduction", "relu": "elementwise"}
    for name, kind in want.items():
        assert op_kind(load_task(tasks / f"{name}.yaml")) == kind, name


def _row(predictor, kind, hardware):
    return next(b for b in load_table()["bands"]
                if (b["predictor"], b["kind"], b["hardware"]) == (predictor, kind, hardware))


def test_band_is_the_held_out_figure_with_the_in_sample_beside_it():
    band = error_band("norm", "a100-pcie")
    row = _row("kernel", "norm", "a100-pcie")
    assert band.exact and band.predictor == "kernel" and band.n == row["n"] >= 10
    assert band.pct == row["p80_pct"] and band.in_sample_pct == row["in_sample_p80_pct"]
    assert row["method"] == "leave-family-out"
    text = band.text()
    assert text.startswith("model error on a100-pcie: ±") and "held-out measurements of normalizations" in text
    assert "80th percentile" in text and "in-sample ±" in text and "measured on" not in text
    task = load_task(REPO_DIR / "experiments" / "tasks" / "layernorm.yaml")
    assert error_band(task, "a100-pcie").kind == "norm"


def test_conv_held_out_band_is_wider_than_in_sample():
    """Convolution constants were fitted on the H100 convs: leaving a family out shows what they do on others."""
    conv = _row("eager", "conv", "h100")
    assert conv["p80_pct"] > conv["in_sample_p80_pct"]
    band = error_band("conv", "h100", predictor="eager")
    assert band.pct == conv["p80_pct"]


def test_same_gpu_family_is_widened_to_the_cross_gpu_error():
    own = error_band("norm", "a100-pcie")
    other = error_band("norm", "h200")                       # an NVIDIA GPU with no kernel-model rows
    cross = max(c["p80_pct"] for c in load_table()["cross_gpu"] if c["predictor"] == "kernel")
    assert other.validated and not other.exact and other.measured_on == "a100-pcie"
    assert other.pct == pytest.approx(max(own.pct, cross)) and other.pct >= own.pct
    assert "none measured on h200" in other.text() and f"±{cross:.0f}%" in other.text()


@pytest.mark.parametrize("kind,hardware,predictor", [
    ("scan", "h100", "kernel"),              # no scan among the kernel-model measurements
    ("gemm+epilogue", "a100-pcie", "kernel"),  # plain GEMMs only (Triton's tutorial): an epilogue is another kind
    ("gemm+epilogue", "h100", "kernel"),
    ("softmax", "h100", "kernel"),
    ("norm", "ascend910b2", "kernel"),       # an NPU: no measurement of that hardware family
    ("norm", "ascend910b2", "eager"),
    ("elementwise", "max1550", "eager"),     # Intel GPU
    ("loss", "mi300x", "kernel"),            # AMD GPU
])
def test_unmeasured_kind_or_hardware_family_is_unvalidated(kind, hardware, predictor):
    band = error_band(kind, hardware, predictor=predictor)
    assert not band.validated and band.pct is None
    assert band.unvalidated_text() == f"no published measurements of {band.what()} on {hardware}: unvalidated"


def test_band_note_never_borrows():
    note = band_note("softmax", "h100")
    assert note.startswith("predicted; model error on h100: no published measurements of softmaxes "
                           "on h100: unvalidated; eager estimate: ±")
    assert "a100-pcie" not in note and "all op kinds" not in note
    npu = band_note("norm", "ascend910b2")
    assert "±" not in npu and npu.count(": unvalidated") == 2 and "a100" not in npu
    assert "unvalidated" in band_note("softmax", "no-such-gpu")


def test_a_measured_gpu_gets_its_own_held_out_band():
    """The H100 NVL rows were never fitted on: its bands are its own, in-sample equal to held-out."""
    for predictor in ("kernel", "eager"):
        row = _row(predictor, "norm", "h100-nvl")
        band = error_band("norm", "h100-nvl", predictor=predictor)
        assert band.exact and band.measured_on == "h100-nvl" and band.n == row["n"] == 11
        assert band.pct == row["p80_pct"] == row["in_sample_p80_pct"] and row["method"] == "not fitted on"
        assert "none measured" not in band.detail()


def test_widening_takes_the_largest_cross_gpu_error_of_the_family(monkeypatch):
    from kernelfoundry.fidelity import bands
    band = {"predictor": "kernel", "kind": "norm", "hardware": "a100-pcie", "dataset": "d", "n": 11,
            "method": "leave-family-out", "p80_pct": 10.0, "median_pct": 5.0, "in_sample_p80_pct": 11.0,
            "in_sample_median_pct": 6.0}
    cross = [{"predictor": "kernel", "hardware": hw, "dataset": "d", "n": 25, "p80_pct": p, "median_pct": 1.0}
             for hw, p in (("a100-pcie", 19.0), ("h100-nvl", 22.0), ("ascend910b2", 90.0))]
    for order in (cross, cross[::-1]):
        monkeypatch.setattr(bands, "load_table", lambda order=order: {"bands": [band], "cross_gpu": order})
        got = bands.error_band("norm", "h200")
        assert got.measured_on == "a100-pcie" and got.pct == 22.0 and got.cross_gpu_pct == 22.0   # not the NPU's


def test_gemm_kernel_band_comes_from_the_held_out_tutorial_rows():
    """Triton's tutorial GEMM on the A100 (never fitted on) is the kernel model's GEMM band: its own on
    a100-pcie, widened to the family's cross-GPU error on other NVIDIA GPUs; an epilogue stays unvalidated."""
    row = _row("kernel", "matmul", "a100-pcie")
    assert row["dataset"] == "triton_tutorial_a100" and row["n"] == 10 and row["method"] == "not fitted on"
    assert row["p80_pct"] == row["in_sample_p80_pct"]
    own = error_band(load_task(REPO_DIR / "experiments" / "tasks" / "matmul.yaml"), "a100-pcie")
    assert own.exact and own.kind == "matmul" and own.pct == row["p80_pct"]
    assert "10 held-out measurements of matrix multiplications" in own.text()
    cross = max(c["p80_pct"] for c in load_table()["cross_gpu"] if c["predictor"] == "kernel")
    for hw in ("a100", "h100"):
        other = error_band("matmul", hw)
        assert other.validated and not other.exact and other.measured_on == "a100-pcie"
        assert other.pct == pytest.approx(max(own.pct, cross)) and f"none measured on {hw}" in other.text()
    eager = _row("eager", "matmul", "a100-pcie")
    assert eager["dataset"] == "triton_tutorial_a100_eager" and eager["method"] == "not fitted on"
    assert not error_band("gemm+epilogue", "a100-pcie").validated
