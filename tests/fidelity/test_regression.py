"""The model against every committed dataset: fails when a dataset's error regresses past the
thresholds kept beside it (``<dataset>.thresholds.yaml``), and when the committed error-band table
no longer matches what the datasets give (regenerate it with the command in bands.py)."""

import pytest
import yaml

from kernelfoundry.fidelity.bands import BANDS_PATH, band_rows
from kernelfoundry.fidelity.dataset import load_dataset, load_thresholds
from kernelfoundry.fidelity.predict import predict_dataset
from kernelfoundry.fidelity.report import summaries
from kernelfoundry.fidelity.stats import check

from .common import DATASETS

_PREDICTIONS = {}


def _predict(path):
    if path not in _PREDICTIONS:
        ds = load_dataset(path)
        _PREDICTIONS[path] = (ds, predict_dataset(ds, write_traces=False))
    return _PREDICTIONS[path]


@pytest.mark.parametrize("path", DATASETS, ids=lambda p: p.stem)
def test_dataset_error_within_its_thresholds(path):
    ds, preds = _predict(path)
    thresholds = load_thresholds(ds)
    assert thresholds, f"{ds.thresholds_path} is missing"
    assert len(preds) == len(ds.rows) and all(p.predicted_ms > 0 for p in preds)
    broken = check(summaries(preds)["all"], thresholds)
    assert not broken, f"{ds.name} regressed: {'; '.join(broken)}"


def test_committed_error_bands_match_the_datasets():
    committed = yaml.safe_load(BANDS_PATH.read_text())["bands"]
    fresh = []
    for path in DATASETS:
        ds, preds = _predict(path)
        fresh.extend(band_rows(ds.predictor, ds.hardware, ds.name, preds))
    key = lambda b: (b["predictor"], b["kind"], b["hardware"], b["dataset"])  # noqa: E731
    want = {key(b): b for b in fresh}
    have = {key(b): b for b in committed}
    hint = "regenerate with: python -m kernelfoundry.fidelity experiments/fidelity/* --write-bands"
    assert set(want) == set(have), hint
    for k, b in want.items():
        assert have[k]["n"] == b["n"] and have[k]["p80_pct"] == pytest.approx(b["p80_pct"], abs=1.0), (k, hint)
