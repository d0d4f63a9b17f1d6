"""KernelBench problems in, KernelBench solutions out (docs/kernelbench.md).

A KernelBench problem is a Python file with ``class Model(nn.Module)``, ``get_inputs()`` and
``get_init_inputs()``.  :func:`materialize` imports one (sandboxed) as a cached task file
with a generated seed kernel; :mod:`.export_kb` writes ``ModelNew`` solutions from a run.
"""

from .importer import import_problem, is_problem_file, materialize, write_task

__all__ = ["import_problem", "is_problem_file", "materialize", "write_task"]
