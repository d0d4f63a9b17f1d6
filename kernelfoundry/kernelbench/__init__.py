"""KernelBench problems in, KernelBench solutions out (docs/kernelbench.md).

A KernelBench problem is a Python file with ``class Model(nn.Module)``, ``get_inputs()`` and
``get_init_inputs()``.  :func:`materialize` imports one (sandboxed) as a cached task file
with a generated seed kernel; :func:`load_task_or_problem` (what the commands load a task with)
reads a task file or a problem file; :mod:`.export_kb` writes ``ModelNew`` solutions from a run.
"""

from .importer import import_problem, is_problem_file, materialize, write_task
from .loader import load_task_or_problem

__all__ = ["import_problem", "is_problem_file", "load_task_or_problem", "materialize", "write_task"]
