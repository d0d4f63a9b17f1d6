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
