"""A candidate inside the sandboxed child: the job payload, its inputs, its import, the job's main.

Shared by every job that runs candidate code (the verifier's check and trace jobs, the compile job,
the device timing job):

* ``payload``: what a job payload may carry (the driver-child contract);
* ``inputs``, ``tiled``: seeded inputs by value profile, and target-shape buffers at the memory cost
  of one tile (pure data: the judge draws the same inputs to run the reference);
* ``loader``: import a candidate from a temp file and check its shape (the load gate);
* ``arms``: the branch-arm recorder compiled into the candidate's host code;
* ``guard``: the dispatch guard (host code may only allocate and make views);
* ``job_main``: progress lines and the ``IN.json OUT.json`` main of every sandboxed job.

``loader``, ``arms``, ``guard`` and ``job_main`` run candidate code: the verifier's judging code
never imports them (an import-linter contract, docs/architecture.md).  So these modules are the package's
public surface, imported one by one: a job takes what it runs and nothing more, and the package itself
exports no names.
"""

__all__: list[str] = []
