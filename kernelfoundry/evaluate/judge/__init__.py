"""The verifier's judging side, in the driver: it reads source text and the child's raw reports and
never imports candidate code or the child side.

* ``anticheat`` (+ ``anticheat_atomics``, ``anticheat_base``, ``anticheat_host``, ``anticheat_text``): the
  hack gate, the candidate language checked over the source before anything runs;
* ``correctness``: the correctness gate (the plan of check runs and the verdict on their outputs);
* ``plausibility``: the model gate's checks of work the trace cannot have missed;
* ``descriptors``: the archive's behaviour descriptors, from the measured trace;
* ``compile_gate``, ``confirm``: ahead-of-time compiles of the picked configs; their confirmation.

The score itself is the performance model's (:mod:`kernelfoundry.perfmodel.score`).
"""
