"""The most trips one loop execution may run in the child, and the exception a run past it raises.

The loop helpers (:mod:`loop_hooks`: a ``while`` loop's trips) and the ticket desk
(:mod:`ticket_desk`: a loop over scheduled work tickets) enforce it; the check and trace runs
(:mod:`run_checks`, :mod:`record_trace`) report a :class:`LoopLimit` as the run's failure.
"""

from __future__ import annotations

#: A single ``while`` loop execution may run at most this many trips.
WHILE_TRIP_LIMIT = 100_000


class LoopLimit(BaseException):
    """A ``while`` loop ran past :data:`WHILE_TRIP_LIMIT` trips (BaseException: passes the interpreter)."""
