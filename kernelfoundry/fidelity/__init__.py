"""Model fidelity: the performance model against published GPU measurements.

``python -m kernelfoundry.fidelity DATASET...`` prints the tables (``docs/fidelity.md``);
:func:`error_band` gives the measured error band the user-facing outputs quote;
:func:`op_kind` classifies a task by its reference's ops.
"""

from .bands import ErrorBand, band_note, error_band, model_error_summary
from .dataset import Dataset, FidelityError, Row, load_dataset, load_thresholds
from .opkind import KINDS, classify, op_kind

__all__ = ["ErrorBand", "error_band", "band_note", "model_error_summary", "Dataset", "Row", "FidelityError", "load_dataset", "load_thresholds",
           "KINDS", "classify", "op_kind"]
