"""Real hardware in the loop: correctness and timing on a GPU when one is there (docs/device.md).

``device.py`` picks the backend (``--device auto|cuda|model``), ``timer.py`` times a call
(``DoBenchTimer`` on a GPU, ``FakeTimer`` for tests), ``topk.py`` has the model prune a
candidate's configs to the k the device times, ``child.py`` runs the candidate on the
device inside the sandbox, ``measurer.py`` judges and times the reference beside it and
builds the ``measured`` record stored per candidate.

Outside this package, use these names, not its modules: :func:`resolve_device`; :class:`DeviceMeasurer`,
:class:`MeasureStep` (the verifier's device step) and :func:`merge_verdict` (a verdict with its ``measured`` record); :func:`format_measured` (its text);
``BENCH_SCRIPT``, :func:`bench_spec`, :func:`render_bench` (an export's ``bench_elites.py``).  Each is
imported from its module on first use (the device job, ``measure.child``, imports this package).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import public_names

if TYPE_CHECKING:       # for type checkers, and for grimp's graph: the package depends on these modules
    from .device import resolve_device
    from .export_bench import BENCH_SCRIPT, bench_spec, render_bench
    from .measured_text import format_measured
    from .measurer import DeviceMeasurer, MeasureStep, merge_verdict

_EXPORTS = {"resolve_device": "device", "DeviceMeasurer": "measurer", "MeasureStep": "measurer",
            "merge_verdict": "measurer",
            "format_measured": "measured_text", "BENCH_SCRIPT": "export_bench", "bench_spec": "export_bench",
            "render_bench": "export_bench"}

__all__ = ["BENCH_SCRIPT", "DeviceMeasurer", "MeasureStep", "bench_spec", "format_measured", "merge_verdict", "render_bench",
           "resolve_device"]

__getattr__, __dir__ = public_names(__name__, _EXPORTS, globals())
