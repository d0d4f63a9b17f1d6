"""The op-kind classifier against the datasets' kinds; error bands and their fallbacks."""

from kernelfoundry import REPO_DIR
from kernelfoundry.fidelity import error_band, op_kind
from kernelfoundry.fidelity.dataset import load_dataset
from kernelfoundry.fidelity.opkind import KINDS, classify
from kernelfoundry.perfmodel.baseline import profile_function
from kernelfoundry.task import load_task

from .common import FIDELITY_DIR


def test_classifier_agrees_with_the_eager_datasets():
    for name in ("kernelbench_h100", "liger_a100_eager"):
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


def test_error_band_exact_then_fallbacks():
    band = error_band("norm", "a100-pcie")
    assert band.exact and band.predictor == "kernel" and band.n >= 10 and 0 < band.pct < 100
    assert "normalizations" in band.text() and "±" in band.text() and "measured on" not in band.text()
    other = error_band("norm", "h100")                       # same kind measured on another GPU
    assert other.kind == "norm" and other.measured_on == "a100-pcie" and "measured on a100-pcie" in other.text()
    unmeasured = error_band("conv", "h100")                  # no kernel-model data for convs: all kinds
    assert unmeasured.kind == "all" and not unmeasured.exact
    eager = error_band("softmax", "h100", predictor="eager")
    assert eager.exact and eager.n == 2
    task = load_task(REPO_DIR / "experiments" / "tasks" / "layernorm.yaml")
    assert error_band(task, "a100-pcie").kind == "norm"
