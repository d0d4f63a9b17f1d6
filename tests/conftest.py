"""Shared fixtures: one local Ray instance per test session, started only when a test needs it."""

import os

import pytest

os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# Runs in tests do not share a memory: a test that wants one gives --memory (tests/memory/).
os.environ["KERNELFOUNDRY_MEMORY"] = "off"


@pytest.fixture(scope="session")
def ray_local():
    import ray
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(
                     [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "search")])}})
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def job_module(tmp_path_factory):
    """Factory: ``job_module(source, prefix)`` writes *source* as a job module a sandboxed child can import
    (its directory on PYTHONPATH until the test module ends) and returns its name; fork servers stop after."""
    import uuid
    old = os.environ.get("PYTHONPATH")

    def install(source: str, prefix: str) -> str:
        directory = tmp_path_factory.mktemp(prefix)
        os.chmod(directory, 0o755)
        os.chmod(directory.parent, 0o755)
        name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        (directory / f"{name}.py").write_text(source)
        os.chmod(directory / f"{name}.py", 0o644)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(directory), os.environ.get("PYTHONPATH")) if p)
        return name
    yield install
    from kernelfoundry.sandbox.process import shutdown_fork_servers
    shutdown_fork_servers()
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


#: Fixtures (and test folders) that place a test in the ``ray`` / ``sandbox`` tiers.
RAY_FIXTURES = {"ray_local"}
SANDBOX_FIXTURES = {"job_module"}


def pytest_collection_modifyitems(config, items):
    """Mark tests by what they start: a local Ray instance (``ray``), sandboxed children (``sandbox``).

    A test module that starts Ray itself says so with ``pytestmark = pytest.mark.ray``."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & RAY_FIXTURES:
            item.add_marker(pytest.mark.ray)
        parts = item.path.parts
        if fixtures & SANDBOX_FIXTURES or "sandbox" in parts or "adversarial" in parts:
            item.add_marker(pytest.mark.sandbox)
