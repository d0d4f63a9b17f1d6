"""KernelFoundry: evolutionary quality-diversity search for fast Triton kernels."""

import functools
import importlib
import importlib.resources
import os
from pathlib import Path

__version__ = "0.1.0"

#: Repository root when running from a checkout (holds hardware/, prompts/, experiments/).
PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent

#: Where runs land by default: the checkout's archives/ when there is one, else ./archives.
DEFAULT_ARCHIVES = REPO_DIR / "archives" if (REPO_DIR / "archives").is_dir() else Path("archives")

#: Shipped data: ``kernelfoundry/data/<name>`` (``hardware``, ``prompts``).  In a checkout these are
#: symbolic links to the repository's ``hardware/`` and ``prompts/`` (the files git holds); a built
#: wheel holds copies.  See docs/packaging.md.
DATA_NAMES = ("hardware", "prompts")


@functools.lru_cache(maxsize=None)
def data_dir(name: str) -> Path:
    """The directory of the shipped data *name* (one of :data:`DATA_NAMES`), found through
    :mod:`importlib.resources`; in a checkout whose links did not survive (a Windows clone),
    the repository's own folder.  The path may not exist: callers name it in their errors."""
    if name not in DATA_NAMES:
        raise ValueError(f"unknown package data {name!r}; known: {', '.join(DATA_NAMES)}")
    shipped = importlib.resources.files(__name__).joinpath("data").joinpath(name)
    if isinstance(shipped, os.PathLike) and Path(shipped).is_dir():
        return Path(shipped).resolve()
    if (REPO_DIR / name).is_dir() and (REPO_DIR / "pyproject.toml").is_file():
        return REPO_DIR / name
    return Path(str(shipped))


def public_names(package: str, exports: dict[str, str], namespace: dict) -> tuple:
    """A subpackage's PEP 562 ``__getattr__`` and ``__dir__``: its public names, each imported from its
    module on first use, so that importing the package imports none of its modules (the sandboxed
    child imports ``evaluate.child``, below the ``evaluate`` package).  *exports* maps a public name
    to ``"module"`` or ``"module:attribute"``, read as ``from .module import attribute as name`` (an
    attribute may be a submodule); *namespace* is the package's ``globals()``.  A name is looked up in
    its module every time, never copied into the package: what a test patches in the module is what
    the package gives.  Usage: ``__getattr__, __dir__ = public_names(__name__, _EXPORTS, globals())``."""

    def __getattr__(name: str):
        spec = exports.get(name)
        if spec is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = spec.partition(":")
        source = importlib.import_module(f"{package}.{module}")
        attribute = attribute or name
        if hasattr(source, attribute):
            return getattr(source, attribute)
        return importlib.import_module(f"{source.__name__}.{attribute}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
