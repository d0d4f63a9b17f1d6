"""The dataset importer reproduces the committed datasets; the calibration command runs."""

import importlib.util

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.fidelity.calibrate import main as calibrate

from .common import FIDELITY_DIR

SHARED = REPO_DIR.parents[0] / "shared" / "fidelity"


@pytest.mark.skipif(not (SHARED / "kernelbench_h100.yaml").is_file(), reason="../shared/fidelity is not here")
def test_importer_reproduces_the_committed_datasets(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("import_shared", FIDELITY_DIR / "import_shared.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    assert module.main([str(SHARED)]) == 0
    for name in ("kernelbench_h100.yaml", "liger_a100.yaml", "liger_a100_eager.yaml"):
        assert (tmp_path / name).read_text() == (FIDELITY_DIR / name).read_text(), name


def test_calibrate_prints_fits(capsys):
    assert calibrate([str(FIDELITY_DIR / "kernelbench_h100.yaml"), "--sweeps", "1"]) == 0
    out = capsys.readouterr().out
    assert "CONV_TC = (" in out and "rms log error over" in out
