"""Paths shared by the fidelity tests."""

from kernelfoundry import REPO_DIR
from kernelfoundry.fidelity.dataset import is_dataset_file

FIDELITY_DIR = REPO_DIR / "experiments" / "fidelity"
DATASETS = sorted(p for p in FIDELITY_DIR.glob("*.yaml") if is_dataset_file(p))
