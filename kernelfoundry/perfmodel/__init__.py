"""The performance model: hardware specs, a counted trace's latency, the eager baseline (docs/perfmodel.md).

Outside this package, use these names, not its modules (tests/test_architecture.py checks it):

* the hardware library (``hardware``): :func:`load_hardware`, :func:`resolve_hardware`,
  :func:`list_hardware`, :class:`HardwareSpec`, :func:`get_figure`, :func:`with_figures`,
  :func:`writable_hardware_dir`, ``HARDWARE_DIR``, ``HARDWARE_DIR_ENV``, ``TRITON_TARGET_RE``;
* a candidate's score (``score``): :func:`score_candidate`; the model below it: :func:`launch_features`
  (``features``), :class:`HardwareArrays`, :func:`evaluate`, :func:`sum_launches`, ``BOUNDS`` (``model``),
  :func:`unaligned_bytes` (``alignment``), :func:`plan_configs`, :func:`sweep`, :func:`compiled_arrays`,
  ``HINT_DEFAULTS`` (``tuning``);
* the eager baseline: :func:`profile_reference`, :func:`profile_function`, :func:`eager_estimate`,
  :class:`ReferenceProfile` (``baseline``); the timings ``TIMINGS``, ``DO_BENCH``; the op families of
  its rules ``GEMMS``, ``POOLS``, ``LOSSES``, ``REDUCTIONS``, ``SCANS``; and the rule modules whose fitted
  constants the fidelity tools refit: ``rules_conv``, ``rules_matmul``, ``rules_norm``,
  ``rules_pointwise``, ``rules_reduce``, ``eager_kernels`` (``eager/``).

Each name is imported from its module on first use (loading the hardware library never imports torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import public_names

if TYPE_CHECKING:       # for type checkers, and for grimp's graph: the package depends on these modules
    from .alignment import unaligned_bytes
    from .baseline import ReferenceProfile, eager_estimate, profile_function, profile_reference
    from .eager import DO_BENCH, TIMINGS, rules_conv, rules_matmul, rules_norm, rules_pointwise, rules_reduce
    from .eager import kernels as eager_kernels
    from .eager.rules_conv import POOLS
    from .eager.rules_matmul import GEMMS
    from .eager.rules_norm import LOSSES
    from .eager.rules_reduce import REDUCTIONS, SCANS
    from .features import launch_features
    from .hardware import (HARDWARE_DIR, HARDWARE_DIR_ENV, TRITON_TARGET_RE, HardwareSpec, get_figure,
                           list_hardware, load_hardware, resolve_hardware, with_figures, writable_hardware_dir)
    from .model import BOUNDS, HardwareArrays, evaluate, sum_launches
    from .score import score_candidate
    from .tuning import HINT_DEFAULTS, compiled_arrays, plan_configs, sweep

_EXPORTS = {
    **dict.fromkeys(("HARDWARE_DIR", "HARDWARE_DIR_ENV", "TRITON_TARGET_RE", "HardwareSpec", "get_figure",
                     "list_hardware", "load_hardware", "resolve_hardware", "with_figures",
                     "writable_hardware_dir"), "hardware"),
    "score_candidate": "score", "launch_features": "features", "unaligned_bytes": "alignment",
    **dict.fromkeys(("BOUNDS", "HardwareArrays", "evaluate", "sum_launches"), "model"),
    **dict.fromkeys(("HINT_DEFAULTS", "compiled_arrays", "plan_configs", "sweep"), "tuning"),
    **dict.fromkeys(("ReferenceProfile", "eager_estimate", "profile_function", "profile_reference"), "baseline"),
    "TIMINGS": "eager", "DO_BENCH": "eager", "eager_kernels": "eager:kernels",
    **dict.fromkeys(("rules_conv", "rules_matmul", "rules_norm", "rules_pointwise", "rules_reduce"), "eager"),
    "POOLS": "eager.rules_conv", "GEMMS": "eager.rules_matmul", "LOSSES": "eager.rules_norm",
    "REDUCTIONS": "eager.rules_reduce", "SCANS": "eager.rules_reduce",
}

__all__ = ["BOUNDS", "DO_BENCH", "GEMMS", "HARDWARE_DIR", "HARDWARE_DIR_ENV", "HINT_DEFAULTS", "HardwareArrays",
           "HardwareSpec", "LOSSES", "POOLS", "REDUCTIONS", "ReferenceProfile", "SCANS", "TIMINGS",
           "TRITON_TARGET_RE", "compiled_arrays", "eager_estimate", "eager_kernels", "evaluate", "get_figure",
           "launch_features", "list_hardware", "load_hardware", "plan_configs", "profile_function",
           "profile_reference", "resolve_hardware", "rules_conv", "rules_matmul", "rules_norm",
           "rules_pointwise", "rules_reduce", "score_candidate", "sum_launches", "sweep", "unaligned_bytes",
           "with_figures", "writable_hardware_dir"]

__getattr__, __dir__ = public_names(__name__, _EXPORTS, globals())
