"""Shared fixtures: one local Ray instance per test session, started only when a test needs it."""

import os

import pytest

os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# Runs in tests do not share a memory: a test that wants one gives --memory (tests/memory/).
os.environ["KERNELFOUNDRY_MEMORY"] = "off"
# The verifier's side-by-side jobs fill idle CPUs; the suite's two pytest-xdist workers leave none (the tests
# of those jobs turn them back on).
os.environ["KERNELFOUNDRY_SIDE_BY_SIDE"] = "0"


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


#: Tests left out of the quick tier (``-m "not slow"``): whole commands end to end, benchmark smokes,
#: the adversarial corpus, interpreter runs at KernelBench sizes (over ~10 s each on a quiet 2-core
#: machine, measured with ``--durations``).  A path prefix: a module, or a test function of it.
SLOW = (
    "tests/adversarial/test_adversarial.py",
    "tests/compiler/test_compile.py::test_every_seed_compiles_for_sm90_sm80_gfx942",
    "tests/core/test_plot_export.py::test_export_files_run_match_reference_and_pass_the_verifier",
    "tests/evaluate/test_compile_gate.py::test_matmul_seed_compiles_and_the_model_uses_the_compilers_figures",
    "tests/evaluate/test_correctness.py::test_shipped_seeds_pass_load_and_correctness",
    "tests/evaluate/test_pipeline.py::test_seed_end_to_end",
    "tests/evaluate/test_trace.py::test_a_trusted_check_after_a_direct_launch_in_the_same_process",
    "tests/evaluate/test_trace.py::test_child_runs_as_a_module",
    "tests/fidelity/test_kernels.py::test_liger_style_kernel_passes_verify",
    "tests/kernelbench/test_kernelbench.py::test_a_problem_folder_bench_counts_problems_without_a_start",
    "tests/kernelbench/test_kernelbench.py::test_fidelity_generator_smoke",
    "tests/kernelbench/test_seed_attention.py",
    "tests/kernelbench/test_seed_pool.py",
    "tests/measure/test_device_path.py",
    "tests/compiler/test_hostile.py",
    "tests/fidelity/test_cli.py::test_tables_json_and_plot",
    "tests/fidelity/test_regression.py::test_committed_error_bands_match_the_datasets",
    "tests/perfmodel/test_real_traces.py::test_naive_matmul_seed_prefers_larger_tiles",
    "tests/evaluate/test_trace_cache.py::test_a_failed_trace_is_not_cached",
    "tests/evaluate/test_compile_gate.py::test_a_kernel_that_compiles_nowhere_fails_the_compile_gate",
    "tests/test_llm_drafts.py::test_when_every_draft_fails_the_run_says_why_and_keeps_them",
    "tests/memory/test_memory_runs.py",
    "tests/mutate/test_builtin_run.py::test_chain_of_20_mutations_stays_correct",
    "tests/mutate/test_fuse_row_reduction.py::test_child_passes_the_verifier_and_beats_the_unfused_parent",
    "tests/mutate/test_unwrap_persistent.py::test_split_row_applies_to_a_persistent_kernel_and_matches_reference",
    "tests/search/test_cluster.py",
    "tests/search/test_driver.py::test_dead_worker_is_replaced_and_run_goes_on",
    "tests/test_bench.py::test_leave_one_out_memory_runs_each_task_cold_then_with_the_others_memory",
    "tests/test_bench.py::test_tiny_suite_all_methods_end_to_end",
    "tests/test_bench_engine.py",
    "tests/test_bench_kernelbench.py",
    "tests/test_bench_routing.py",
    "tests/test_bench_verifier.py",
    "tests/test_bench_memory.py",
    "tests/test_bench_parallel.py",
    "tests/test_evolve_cli.py::test_ctrl_c_exits_130_naming_the_run_and_a_run_killed_before_its_seeds_resumes",
    "tests/test_evolve_cli.py::test_sigkill_loses_only_in_flight_and_resume_finishes",
    "tests/test_llm_drafts.py::test_drafts_through_litellm_against_a_local_openai_compatible_server",
    "tests/test_llm_drafts.py::test_replayed_drafts_fix_a_failure_then_search_and_export_a_kernelbench_solution",
    "tests/test_llm_evolve.py",
    "tests/test_redteam.py",
    "tests/test_verify_cli.py::test_seed_through_the_real_command",
)

#: Fixtures (and test folders) that place a test in the ``ray`` / ``sandbox`` tiers.
RAY_FIXTURES = {"ray_local"}
SANDBOX_FIXTURES = {"job_module"}


def pytest_collection_modifyitems(config, items):
    """Mark tests by what they start: a local Ray instance (``ray``), sandboxed children (``sandbox``);
    and those listed in :data:`SLOW` as ``slow``.

    A test module that starts Ray itself says so with ``pytestmark = pytest.mark.ray``."""
    root = config.rootpath
    for item in items:
        where = item.nodeid if not item.nodeid.startswith("/") else str(item.path.relative_to(root))
        if where.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & RAY_FIXTURES:
            item.add_marker(pytest.mark.ray)
        parts = item.path.parts
        if fixtures & SANDBOX_FIXTURES or "sandbox" in parts or "adversarial" in parts:
            item.add_marker(pytest.mark.sandbox)
