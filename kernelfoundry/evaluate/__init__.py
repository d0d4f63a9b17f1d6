"""The verifier: does a candidate kernel compute the reference, and what would it cost (docs/verifier.md).

Outside this package, use these names, not its modules (tests/test_architecture.py checks it):

* :class:`Verifier` and :class:`VerifyOptions` (``verifier``): one task's verifier with its typed options,
  caches and device step, what the ``verify`` command and the search's workers call;
* :func:`verify` and :func:`default_limits` (``pipeline``): every gate in order, a :class:`VerifyResult`;
  :func:`check_trusted` (``inprocess``): the check job in this process, for trusted kernels only;
* :class:`VerdictCache`, :func:`context_key`, :class:`TraceCache`, :data:`TRACE_CACHE_FILE`: verdicts and
  traces kept between candidates and runs;
* the correctness rule, for the device's outputs (``judge.correctness``): :func:`compare`,
  :func:`output_scale`, :func:`output_tensor`, :func:`load_reference`, :class:`MalformedReport`;
* the archive's behaviour descriptors (``judge.descriptors``): ``DESCRIPTOR_NAMES``, ``DESCRIPTOR_RANGES``,
  ``DESCRIPTOR_BINS``, ``BIN_LABELS``;
* :func:`write_best_asm` (``judge.compile_gate``); :func:`dotted` (``judge.anticheat_base``: how the hack gate
  reads a dotted name, for the red team's transformations).

Each name is imported from its module on first use: the sandboxed child imports ``evaluate.child``, and
with it this package, without the driver's side.  The records (:class:`VerifyResult`, traces) are
:mod:`kernelfoundry.records`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import public_names

if TYPE_CHECKING:       # for type checkers, and for grimp's graph: the package depends on these modules
    from .inprocess import check_trusted
    from .judge.anticheat_base import dotted
    from .judge.compile_gate import write_best_asm
    from .judge.correctness import MalformedReport, compare, load_reference, output_scale, output_tensor
    from .judge.descriptors import BIN_LABELS, DESCRIPTOR_BINS, DESCRIPTOR_NAMES, DESCRIPTOR_RANGES
    from .pipeline import default_limits, verify
    from .trace.cache import FILE_NAME as TRACE_CACHE_FILE
    from .trace.cache import TraceCache
    from .verdict_cache import VerdictCache, context_key
    from .verifier import Verifier, VerifyOptions

_EXPORTS = {
    "Verifier": "verifier", "VerifyOptions": "verifier",
    "verify": "pipeline", "default_limits": "pipeline", "check_trusted": "inprocess",
    "VerdictCache": "verdict_cache", "context_key": "verdict_cache",
    "TraceCache": "trace.cache", "TRACE_CACHE_FILE": "trace.cache:FILE_NAME",
    "MalformedReport": "judge.correctness", "compare": "judge.correctness", "load_reference": "judge.correctness",
    "output_scale": "judge.correctness", "output_tensor": "judge.correctness",
    "BIN_LABELS": "judge.descriptors", "DESCRIPTOR_BINS": "judge.descriptors",
    "DESCRIPTOR_NAMES": "judge.descriptors", "DESCRIPTOR_RANGES": "judge.descriptors",
    "write_best_asm": "judge.compile_gate", "dotted": "judge.anticheat_base",
}

__all__ = ["BIN_LABELS", "DESCRIPTOR_BINS", "DESCRIPTOR_NAMES", "DESCRIPTOR_RANGES", "MalformedReport",
           "TRACE_CACHE_FILE", "TraceCache", "VerdictCache", "Verifier", "VerifyOptions", "check_trusted", "compare", "context_key",
           "default_limits", "dotted", "load_reference", "output_scale", "output_tensor", "verify",
           "write_best_asm"]

__getattr__, __dir__ = public_names(__name__, _EXPORTS, globals())
