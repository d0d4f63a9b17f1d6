"""The model against every committed dataset: fails when a dataset's error regresses past the
thresholds kept beside it (``<dataset>.thresholds.yaml``), and when the committed error-band table
no longer matches what the datasets give (regenerate it with the command in bands.py)."""

import pytest
import yaml

from kernelfoundry.fidelity.bands import BANDS_PATH, table_from
from kernelfoundry.fidelity.crossval import held_out
from kernelfoundry.fidelity.dataset import load_dataset, load_thresholds
from kernelfoundry.fidelity.predict import predict_dataset, row_models
from kernelfoundry.fidelity.tables import summaries
from kernelfoundry.fidelity.error_stats import check

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
    """The committed bands are the held-out figures (cross-validation re-run here), in-sample beside them."""
    committed = yaml.safe_load(BANDS_PATH.read_text())
    results = []
    for path in DATASETS:
        ds, preds = _predict(path)
        results.append((ds, ds.hardware, preds, held_out(ds, row_models(ds))))
    fresh = table_from(results)
    hint = "regenerate with: python -m kernelfoundry.fidelity experiments/fidelity/* --write-bands"
    for table, key in (("bands", ("predictor", "kind", "hardware", "dataset")),
                       ("cross_gpu", ("predictor", "hardware", "dataset"))):
        want = {tuple(b[k] for k in key): b for b in fresh[table]}
        have = {tuple(b[k] for k in key): b for b in committed[table]}
        assert set(want) == set(have), (table, hint)
        for k, b in want.items():
            assert have[k]["n"] == b["n"] and have[k].get("method") == b.get("method"), (k, hint)
            for field in ("p80_pct", "in_sample_p80_pct"):
                if field in b:
                    assert have[k][field] == pytest.approx(b[field], abs=1.0), (k, field, hint)
