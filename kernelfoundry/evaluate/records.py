"""The records moved to :mod:`kernelfoundry.records` (the contract of evaluate, perfmodel, measure and
search, so it lives below all four; docs/architecture.md).  This module keeps the old name for the
code inside evaluate/ and for imports written before the move."""

from ..records import (INCONCLUSIVE, ConfigTrace, GateResult, HardwareScore, LaunchTrace,  # noqa: F401
                       TensorTraffic, VerifyResult, is_inconclusive)
