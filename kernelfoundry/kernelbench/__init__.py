"""KernelBench problems in, KernelBench solutions out (docs/kernelbench.md).

A KernelBench problem is a Python file with ``class Model(nn.Module)``, ``get_inputs()`` and
``get_init_inputs()``.  :func:`materialize` imports one (sandboxed) as a cached task file
with a generated seed kernel; :func:`load_task_or_problem` (what the commands load a task with)
reads a task file or a problem file; :func:`modelnew_source` writes a ``ModelNew`` solution from a
run's kernel.  Outside this package, use these names, not its modules; those of ``cli`` (the problem
files of a directory), ``coverage`` (a failure's category) and ``export_kb`` (the solution files) are
imported on first use.
"""

from typing import TYPE_CHECKING

from .. import public_names
from .importer import import_problem, is_problem_file, level_of, materialize, task_name, write_task
from .task_loader import load_task_or_problem
from .reference import binding_of, problem_of

if TYPE_CHECKING:       # for type checkers, and for grimp's graph: the package depends on these modules
    from .cli import problems_in
    from .coverage import failure_category
    from .export_kb import modelnew_source, problem_file_name, problem_source

_EXPORTS = {"problems_in": "cli", "failure_category": "coverage", "modelnew_source": "export_kb",
            "problem_file_name": "export_kb", "problem_source": "export_kb"}

__all__ = ["binding_of", "failure_category", "import_problem", "is_problem_file", "level_of", "load_task_or_problem",
           "materialize", "modelnew_source", "problem_file_name", "problem_of", "problem_source", "problems_in",
           "task_name", "write_task"]

__getattr__, __dir__ = public_names(__name__, _EXPORTS, globals())
