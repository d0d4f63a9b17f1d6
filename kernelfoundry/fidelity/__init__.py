"""Model fidelity: the performance model against published GPU measurements.

``python -m kernelfoundry.fidelity DATASET...`` prints the tables (``docs/fidelity.md``);
:func:`error_band` gives the measured error band the user-facing outputs quote;
:func:`op_kind` classifies a task by its reference's ops.  Outside this package, use these names, not
its modules; :func:`kernel_prediction` and :func:`get_traces` (the model's prediction for a dataset row,
from its cached traces) are imported on first use.
"""

from typing import TYPE_CHECKING

from .. import public_names
from .bands import ErrorBand, band_note, error_band, model_error_summary
from .dataset import Dataset, FidelityError, Row, load_dataset, load_thresholds
from .opkind import KINDS, classify, op_kind
from .error_stats import summarize

if TYPE_CHECKING:       # for type checkers, and for grimp's graph: the package depends on these modules
    from .predict import kernel_prediction
    from .traces import get_traces

_EXPORTS = {"kernel_prediction": "predict", "get_traces": "traces"}

__all__ = ["ErrorBand", "error_band", "band_note", "model_error_summary", "Dataset", "Row", "FidelityError",
           "load_dataset", "load_thresholds", "KINDS", "classify", "op_kind", "summarize", "kernel_prediction",
           "get_traces"]

__getattr__, __dir__ = public_names(__name__, _EXPORTS, globals())
