"""The package's layers hold (docs/architecture.md): import-linter checks the contracts in ``.importlinter``
on grimp's import graph, which counts imports written inside functions too (checked here as well); and
outside a package, its public names are used, not its modules ("Public surfaces")."""

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
    """The layers contract is only as good as the graph: a Ray worker imports ``measure`` inside a method and
    ``verify.run`` imports the KernelBench loader inside the function; both must be in grimp's graph."""
    graph = grimp.build_graph("kernelfoundry", cache_dir=None)
    for importer, imported in (("kernelfoundry.search.workers", "kernelfoundry.measure"),
                               ("kernelfoundry.verify", "kernelfoundry.kernelbench")):
        details = graph.get_import_details(importer=importer, imported=imported)
        assert details, f"grimp's graph misses {importer} -> {imported} (an import inside a function)"


# ---- public surfaces: outside a package, its public names, not its modules (docs/architecture.md) ----------

#: Packages whose modules are their public surface: they export no names.
MODULE_SURFACES = {"kernelfoundry.harness": "a job imports the module it runs and no more; the trust contracts name "
                                            "its modules one by one"}
#: Modules that are public on their own in a package that otherwise exports names.
PUBLIC_MODULES = {"kernelfoundry.compiler.capture": "it imports and runs candidate code, which the verifier's judge "
                                                    "(an importer of the compiler package) must not reach"}
#: Imports of another package's module left for later, each with why; an entry that no longer holds fails.
PENDING: dict[tuple[str, str], str] = {}


def _subpackages() -> list[str]:
    import pkgutil

    import kernelfoundry
    return sorted(f"kernelfoundry.{m.name}" for m in pkgutil.iter_modules(kernelfoundry.__path__) if m.ispkg)


def _private(module: str, packages: list[str]) -> str | None:
    """The package whose private module *module* is (None: a package itself, a top-level module, or public)."""
    package = ".".join(module.split(".")[:2])
    if package not in packages or module == package or package in MODULE_SURFACES or module in PUBLIC_MODULES:
        return None
    return package


def _advice(package: str, module: str, line: str) -> str:
    """The public names to import instead of what *line* takes from *module*."""
    import ast
    import importlib
    try:
        node = ast.parse(line.strip().rstrip("(\\")).body[0]
        wanted = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
    except (SyntaxError, IndexError):
        wanted = []
    pkg, source = importlib.import_module(package), importlib.import_module(module)
    public = {}
    for name in pkg.__all__:
        try:
            public[id(getattr(pkg, name))] = name
        except Exception:  # noqa: BLE001 - a broken name is the other test's report
            pass
    names, missing = [], []
    for name in wanted:             # `from X import name`: an attribute of *module*, or *module* itself (X.name)
        obj = source if module.endswith("." + name) and not hasattr(source, name) else getattr(source, name, None)
        (names if id(obj) in public else missing).append(public.get(id(obj), name))
    advice = f"from {package} import {', '.join(names)}" if names else f"the names of {package}.__all__"
    if missing or not wanted:
        advice += (f" ({', '.join(missing) or module.rsplit('.', 1)[1]} not public yet: add what is needed to "
                   f"{package}.__all__, with a line in its docstring)")
    return advice


def test_outside_a_package_its_public_names_are_used_not_its_modules():
    """No module imports another package's modules (grimp counts imports inside functions), except those
    in MODULE_SURFACES, PUBLIC_MODULES and PENDING; ``evaluate`` and ``perfmodel`` are reached only through
    their public names (their ``__init__`` imports each name from its module on first use)."""
    graph = grimp.build_graph("kernelfoundry", cache_dir=None)
    packages = _subpackages()
    found, wrong = set(), []
    for imported in sorted(graph.modules):
        package = _private(imported, packages)
        if package is None:
            continue
        for importer in sorted(graph.find_modules_that_directly_import(imported)):
            if importer == package or importer.startswith(package + "."):
                continue
            if (importer, imported) in PENDING:
                found.add((importer, imported))
                continue
            for d in graph.get_import_details(importer=importer, imported=imported):
                line = d["line_contents"]
                wrong.append(f"{importer}:{d['line_number']} `{line}` reaches into {imported}; use "
                             f"{_advice(package, imported, line)}")
    assert not wrong, "imports of another package's private modules:\n  " + "\n  ".join(wrong)
    stale = sorted(set(PENDING) - found)
    assert not stale, f"PENDING lists imports that are gone (remove them, and from docs/architecture.md): {stale}"


def test_experiments_use_the_public_names_too():
    """The same rule for ``experiments/`` (outside grimp's graph): their imports, read with ``ast``."""
    import ast
    import importlib.util
    packages = _subpackages()
    wrong = []
    for path in sorted((REPO / "experiments").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                submodules = [f"{node.module}.{a.name}" for a in node.names
                              if node.module in packages and importlib.util.find_spec(f"{node.module}.{a.name}")
                              is not None] if node.module in packages else []
                targets = [node.module, *submodules]
            else:
                continue
            for module in targets:
                package = _private(module, packages) if module.startswith("kernelfoundry.") else None
                if package is not None:
                    line = ast.get_source_segment(path.read_text(encoding="utf-8"), node) or ""
                    wrong.append(f"{path.relative_to(REPO)}:{node.lineno} `{line.splitlines()[0]}` reaches into "
                                 f"{module}; use {_advice(package, module, line.splitlines()[0])}")
    assert not wrong, "experiments importing a package's private modules:\n  " + "\n  ".join(wrong)


def test_every_subpackage_has_a_public_face_that_resolves():
    """Each subpackage's ``__init__`` defines ``__all__``, every name in it resolves, a lazily exported name
    is in ``__all__``, shadows no submodule, and grimp sees the ``__init__`` import its module (the
    ``TYPE_CHECKING`` block: the contracts then see what the package depends on)."""
    import importlib
    import pkgutil
    graph = grimp.build_graph("kernelfoundry", cache_dir=None)
    wrong = []
    for package in _subpackages():
        mod = importlib.import_module(package)
        if "__all__" not in vars(mod):
            wrong.append(f"{package}: no __all__ (an empty one, with a docstring saying how the package is used, "
                         f"if it exports no names)")
            continue
        for name in mod.__all__:
            try:
                getattr(mod, name)
            except Exception as exc:  # noqa: BLE001 - every failure is reported
                wrong.append(f"{package}.__all__ names {name!r}, which does not resolve: {exc!r}")
        exports = vars(mod).get("_EXPORTS", {})
        submodules = {m.name for m in pkgutil.iter_modules(mod.__path__)}
        seen = graph.find_modules_directly_imported_by(package)
        for name, spec in exports.items():
            module, _, attribute = spec.partition(":")
            target = f"{package}.{module}"
            if name not in mod.__all__:
                wrong.append(f"{package}: {name!r} is exported lazily but not in __all__")
            if name in submodules:
                wrong.append(f"{package}: the lazy name {name!r} is also a submodule's (the module would shadow it)")
            if target not in seen and f"{target}.{attribute or name}" not in seen:
                wrong.append(f"{package}: grimp does not see __init__ import {target} ({name!r}): add it to the "
                             f"TYPE_CHECKING block")
    assert not wrong, "\n".join(wrong)
