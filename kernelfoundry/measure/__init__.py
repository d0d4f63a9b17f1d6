"""Real hardware in the loop: correctness and timing on a GPU when one is there (docs/device.md).

``device.py`` picks the backend (``--device auto|cuda|model``), ``timer.py`` times a call
(``DoBenchTimer`` on a GPU, ``FakeTimer`` for tests), ``topk.py`` has the model prune a
candidate's configs to the k the device times, ``child.py`` runs the candidate on the
device inside the sandbox, ``measurer.py`` judges and times the reference beside it and
builds the ``measured`` record stored per candidate.
"""
