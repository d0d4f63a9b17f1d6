"""Model fidelity: the performance model against published GPU measurements.

``python -m kernelfoundry.fidelity DATASET...`` prints the tables (``docs/fidelity.md``);
:func:`error_band` gives the measured error band the user-facing outputs quote;
:func:`op_kind` classifies a task by its reference's ops.
"""

from .bands import ErrorBand, error_band
from .dataset import Dataset, FidelityError, Row, load_dataset, load_thresholds
from .opkind import KINDS, classify, op_kind

__all__ = ["ErrorBand", "error_band", "Dataset", "Row", "FidelityError", "load_dataset", "load_thresholds",
           "KINDS", "classify", "op_kind"]
