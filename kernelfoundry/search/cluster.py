"""Connecting to Ray: a private local instance, or a cluster that gets the project's code shipped to it.

Without an address (``--ray-address`` or ``$RAY_ADDRESS``) a run always starts its own local
instance (``address="local"``), whatever ``/tmp/ray/ray_current_cluster`` says.  With one, the
driver connects and ships the code: the package, ``hardware/`` and ``prompts/`` travel as the
job's ``working_dir``, so a worker node needs only the dependencies (docs/cluster.md).
Token authentication is Ray's own: ``RAY_AUTH_MODE=token`` plus the token (docs/cluster.md).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from .. import PACKAGE_DIR, REPO_DIR
from ..errors import UserError

#: what a worker needs besides the dependencies: the package, with the data it reads at run time (kernelfoundry/data)
SHIPPED_DIRS = ("kernelfoundry",)
SHIPPED_EXCLUDES = ["__pycache__", "*.pyc", "*.so"]


def resolve_address(address: str | None) -> str | None:
    """The cluster to join: the one given, else ``$RAY_ADDRESS`` (set by ``ray job submit``), else None."""
    return address or os.environ.get("RAY_ADDRESS") or None


def start_ray(*, workers: int = 0, address: str | None = None) -> bool:
    """Connect to the cluster at *address* or start a private local Ray; True if this call did either.

    An already initialised Ray (a bench running many searches, a test session) is reused.
    """
    import ray
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    address = resolve_address(address)
    try:
        if address:
            # Ray reads the staged copy again whenever it creates an actor: it lives as long as this process
            tmp = Path(tempfile.mkdtemp(prefix="kernelfoundry-code-"))
            atexit.register(shutil.rmtree, tmp, True)
            ray.init(address=address, log_to_driver=False, include_dashboard=False,
                     runtime_env=code_runtime_env(tmp))
        else:
            n_cpus = max(os.cpu_count() or 1, workers or 1)
            ray.init(address="local", num_cpus=n_cpus, include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(
                         [str(REPO_DIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}})
    except Exception as exc:
        raise UserError(_start_error(address, exc)) from None
    return True


def _start_error(address: str | None, exc: Exception) -> str:
    if not address:
        return f"Ray failed to start (a local Ray instance): {type(exc).__name__}: {exc}"
    msg = f"Ray failed to connect to the cluster at {address}: {type(exc).__name__}: {exc}."
    if isinstance(exc, ConnectionError):
        mode = os.environ.get("RAY_AUTH_MODE")
        msg += (" Check the address (the head's `ray start --head --port=PORT`) and that this machine can reach "
                "it. A cluster with token authentication (what `ray start --head` turns on when it finds "
                "~/.ray/auth_token) refuses a driver without its token: run with RAY_AUTH_MODE=token and the "
                "head's token in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"
                + (f" (RAY_AUTH_MODE is {mode!r} here)" if mode else " (RAY_AUTH_MODE is not set here)")
                + ". See docs/cluster.md.")
    return msg


def stage_code(dest: Path) -> Path:
    """Copy what a worker node needs (package, hardware specs, prompt templates) into *dest*."""
    for name in SHIPPED_DIRS:
        src = PACKAGE_DIR if name == "kernelfoundry" else REPO_DIR / name
        if not src.is_dir():
            raise UserError(f"cannot ship the code to the cluster: {src} is missing (run from a KernelFoundry "
                            "checkout or an installation that includes hardware/ and prompts/).")
        shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns(*SHIPPED_EXCLUDES))
    return dest


def code_runtime_env(tmp: Path) -> dict:
    """The Ray runtime environment that ships the project to every node of a cluster."""
    bundle = stage_code(tmp / "bundle")
    return {"working_dir": str(bundle), "excludes": list(SHIPPED_EXCLUDES),
            "env_vars": {"RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0"}}


def cluster_cpus() -> float:
    """CPUs of the live nodes of the connected Ray instance."""
    import ray
    return float(ray.cluster_resources().get("CPU", 0.0))


def missing_dependencies_hint(exc: BaseException) -> str:
    """A sentence naming the module a worker node lacks, when a worker failed to start for that reason."""
    text = str(exc)
    for marker in ("ModuleNotFoundError: ", "ImportError: "):
        i = text.find(marker)
        if i >= 0:
            what = text[i + len(marker):].splitlines()[0].strip()
            return (f" A node lacks a dependency ({what}): every node needs the project's dependencies "
                    "installed (the code itself is shipped); see docs/cluster.md, 'What each node needs'.")
    return ""
