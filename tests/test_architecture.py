"""The package's layers hold (docs/architecture.md): import-linter checks the contracts in ``.importlinter``
on grimp's import graph, which counts imports written inside functions too (checked here as well)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / ".importlinter"

grimp = pytest.importorskip("grimp", reason="import-linter is in the test extra: pip install -e '.[test]'")
pytest.importorskip("importlinter", reason="import-linter is in the test extra: pip install -e '.[test]'")


def test_the_import_contracts_hold():
    run = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                          "sys.exit(lint_imports_command())", "--config", str(CONFIG), "--no-cache"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    out = run.stdout + run.stderr
    broken = [m.group(1) for m in re.finditer(r"^(\S.*?) BROKEN(?: \(.*\))?$", out, re.MULTILINE)]
    assert run.returncode == 0, (f"import contract(s) broken: {broken or '(see below)'}; the layers and what each "
                                 f"may import are in docs/architecture.md\n{out[-6000:]}")
    assert "0 broken" in out


def test_the_graph_counts_imports_inside_functions():
    """The layers contract is only as good as the graph: ``task.main`` imports ``kernelbench.cli`` inside the
    function (the one edge the contracts ignore on purpose), and ``verify.run`` imports the KernelBench
    loader inside the function; both must be in grimp's graph."""
    graph = grimp.build_graph("kernelfoundry", cache_dir=None)
    for importer, imported in (("kernelfoundry.task", "kernelfoundry.kernelbench.cli"),
                               ("kernelfoundry.verify", "kernelfoundry.kernelbench")):
        details = graph.get_import_details(importer=importer, imported=imported)
        assert details, f"grimp's graph misses {importer} -> {imported} (an import inside a function)"
