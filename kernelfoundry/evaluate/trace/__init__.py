"""Counting a trace: pure functions over raw events that the child and the judge both run.

* ``counts``: raw per-program events -> weighted :class:`LaunchTrace` records;
* ``loop_plan``: which loop trips a sampled program runs, and what each stands for;
* ``trip_witness``, ``sample_spread``, ``census``: loop weights, the dense-sample bound, the census;
* ``sector_runs``: memory accesses as runs of sectors;
* ``cache``: traces of one kernel config kept for the next candidate that differs only in PARAMS.

The recording side (hooks into Triton's interpreter) is :mod:`kernelfoundry.evaluate.child`.
"""
