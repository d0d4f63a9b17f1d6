"""Cross-validation: a held-out row's prediction never depends on its own family's measurements."""

import dataclasses

import pytest

from kernelfoundry.fidelity.crossval import FITTED_FIGURES, NEVER_FITTED, RULE_KNOBS, RULES_FITTED_ON, family, held_out
from kernelfoundry.fidelity.dataset import load_dataset
from kernelfoundry.fidelity.predict import row_models
from kernelfoundry.perfmodel import load_hardware

from .common import FIDELITY_DIR


@pytest.fixture(scope="module")
def convs():
    ds = load_dataset(FIDELITY_DIR / "kernelbench_h100.yaml")
    rows = tuple(r for r in ds.rows if r.kind in ("conv", "conv-transposed") and r.weight == 1.0)
    return dataclasses.replace(ds, rows=rows)


def test_families():
    ds = load_dataset(FIDELITY_DIR / "kernelbench_h100.yaml")
    fams = {r.id.split("_", 1)[0]: family(r) for r in ds.rows}
    assert fams["L1-61"] == "conv-transposed 3D" and fams["L1-64"] == "conv-transposed 1D"
    assert fams["L1-55"] == "conv 2D" and fams["L1-23"] == "softmax" and fams["L2-9"] == "gemm+epilogue"
    liger = load_dataset(FIDELITY_DIR / "liger_a100.yaml")
    assert {family(r) for r in liger.rows} == {"rms_norm", "layer_norm", "rope", "cross_entropy"}


def test_held_out_family_does_not_see_its_own_measurements(convs):
    models = row_models(convs)
    base = held_out(convs, models, sweeps=1)
    assert base.method == "leave-family-out" and set(base.refits) == set(base.families)
    target = "conv-transposed 2D"
    # the family's measurements tripled: its own held-out predictions must not move, the others' refits do
    moved = dataclasses.replace(convs, rows=tuple(
        dataclasses.replace(r, measured_ms=r.measured_ms * 3) if family(r) == target else r for r in convs.rows))
    again = held_out(moved, models, sweeps=1)
    for f, a, b in zip(base.families, base.predicted_ms, again.predicted_ms):
        if f == target:
            assert a == pytest.approx(b, rel=1e-12)
    assert any(abs(a / b - 1) > 1e-3 for f, a, b in zip(base.families, base.predicted_ms, again.predicted_ms)
               if f != target)


def test_refit_restores_the_shipped_constants(convs):
    before = {k.name: k.current(None) for k in RULE_KNOBS}
    held_out(convs, row_models(convs), sweeps=1)
    assert {k.name: k.current(None) for k in RULE_KNOBS} == before


def test_eager_rows_of_another_gpu_are_held_out_by_gpu():
    ds = load_dataset(FIDELITY_DIR / "liger_a100_eager.yaml")
    ho = held_out(ds, row_models(ds))
    assert ho.method == "leave-GPU-out" and ho.gpu_out_ms == ho.predicted_ms
    assert ho.refits["gpu"]["dram_efficiency"] == (0.85,)       # the prior, not the figure fitted on A100 rows


@pytest.mark.parametrize("stem", ["liger_h100nvl", "liger_h100nvl_eager"])
def test_h100_nvl_rows_are_held_out_of_every_fit(stem):
    """Nothing was fitted on the H100 NVL: no rule constant, no figure of its hardware file."""
    ds = load_dataset(FIDELITY_DIR / f"{stem}.yaml")
    assert ds.hardware not in FITTED_FIGURES and ds.name not in RULES_FITTED_ON
    ho = held_out(ds, row_models(ds))
    assert ho.method == "not fitted on" and ho.gpu_out_ms == ho.predicted_ms and not ho.refits


@pytest.mark.parametrize("stem", ["triton_tutorial_a100", "triton_tutorial_a100_eager"])
def test_tutorial_gemm_rows_are_held_out_on_a_fitted_gpu(stem):
    """The a100-pcie figures were fitted on Liger's rows, never on Triton's tutorial: the shipped model's
    error is held out as it stands, with nothing refitted, and the rows are no cross-GPU rows."""
    ds = load_dataset(FIDELITY_DIR / f"{stem}.yaml")
    assert ds.hardware in FITTED_FIGURES and ds.name in NEVER_FITTED and ds.name not in RULES_FITTED_ON
    models = row_models(ds)
    ho = held_out(ds, models)
    assert ho.method == "not fitted on" and not ho.refits and ho.gpu_out_ms == []
    assert ho.predicted_ms == [m(load_hardware(ds.hardware)) for m in models]
