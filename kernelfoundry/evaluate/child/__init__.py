"""The verifier's side that runs in the sandbox beside the candidate: it reports raw data, judges nothing.

* ``entry``: the job's entry point (``python -m kernelfoundry.evaluate.child.entry IN.json OUT.json``);
* ``run_checks``: the correctness runs (outputs of the judge's planned runs, grid probes);
* ``record_trace``: the trace (raw per-program events at the target shapes, the census);
* ``trace_hooks``, ``loop_hooks``: the hooks into Triton's interpreter behind the trace.
"""
