"""compile_candidate on real kernels: seeds on sm_90 / sm_80 / gfx942, errors, spills, cache, asm."""

from __future__ import annotations

import json

import pytest

from kernelfoundry.candidate import default_config, parse_param_space, source_hash
from kernelfoundry.compiler import CompileCache, CompileReport, compile_candidate
from kernelfoundry.compiler.asm import write_asm
from kernelfoundry.compiler.capture import capture_task_signatures
from kernelfoundry.compiler.gate import code_identity
from kernelfoundry.task import load_task

from .conftest import KERNELS, REPO, capture_module

TARGET_HARDWARE = ["h100", "a100", "mi300x"]


def _seed_cases():
    out = []
    for path in sorted((REPO / "experiments/tasks").glob("*.yaml")):
        task = load_task(path)
        for seed_path, source in task.seed_sources():
            out.append((task.name, seed_path.name))
    return out


@pytest.fixture(scope="module")
def seed_reports(compile_cache):
    """Every seed's default config compiled for sm_90, sm_80 and gfx942 (one report per task seed)."""
    reports = {}
    for task_name, seed_name in _seed_cases():
        task = load_task(REPO / "experiments/tasks" / f"{task_name}.yaml")
        source = dict((p.name, s) for p, s in task.seed_sources())[seed_name]
        sigs = capture_task_signatures(source, task, [default_config(parse_param_space(source))])
        reports[(task_name, seed_name)] = compile_candidate(source, sigs, TARGET_HARDWARE + ["ascend910b2"],
                                                           cache=compile_cache)
    return reports


def test_every_seed_compiles_for_sm90_sm80_gfx942(seed_reports):
    failures = {case: {h: r.hardware[h].reason for h in TARGET_HARDWARE if r.hardware[h].status != "ok"}
                for case, r in seed_reports.items()}
    assert not any(failures.values()), failures
    for report in seed_reports.values():
        assert [report.hardware[h].target for h in TARGET_HARDWARE] == ["cuda:90:32", "cuda:80:32", "hip:gfx942:64"]
        for name in TARGET_HARDWARE:
            for cfg in report.hardware[name].configs.values():
                for kernel in cfg.kernels:
                    res = kernel.resources
                    assert res is not None and 0 < res.registers <= (255 if name != "mi300x" else 512)
                    assert res.vendor == ("amd" if name == "mi300x" else "nvidia")
                    assert set(kernel.artifacts) >= ({"amdgcn", "hsaco"} if name == "mi300x" else {"ptx", "cubin"})


def test_hardware_without_backend_is_reported_not_failed(seed_reports):
    report = seed_reports[("softmax", "softmax_naive.py")]
    npu = report.hardware["ascend910b2"]
    assert npu.status == "no_backend" and npu.target is None and not npu.configs
    assert "no Triton backend for this hardware in the installed wheel" in npu.reason
    assert report.compiled_anywhere and report.failure_reason == ""
    only_npu = CompileReport.from_dict({**report.to_dict(), "hardware": {"ascend910b2": npu.to_dict()}})
    assert only_npu.compiled_anywhere                    # nothing to compile is not a compile failure


def test_matmul_seed_uses_tensor_cores(seed_reports):
    report = seed_reports[("matmul", "matmul_naive.py")]
    families = {h: report.hardware[h].configs[next(iter(report.hardware[h].configs))].kernels[0].resources.tensor_core
                for h in TARGET_HARDWARE}
    assert families == {"h100": "mma.sync", "a100": "mma.sync", "mi300x": "mfma"}    # 16x16 tiles: no wgmma


def test_cached_second_call_runs_no_job(seed_reports, compile_cache):
    task = load_task(REPO / "experiments/tasks/relu.yaml")
    source = task.seed_sources()[0][1]
    sigs = capture_task_signatures(source, task, [default_config(parse_param_space(source))])
    before = compile_cache.stats()
    again = compile_candidate(source, sigs, TARGET_HARDWARE, cache=compile_cache)
    assert again.cache_misses == 0 and again.cache_hits == 3 and again.job == {}
    assert all(k.cached for h in again.hardware.values() for c in h.configs.values() for k in c.kernels)
    after = compile_cache.stats()
    assert after["hits"] == before["hits"] + 3 and after["writes"] == before["writes"]
    first = seed_reports[("relu", "relu_naive.py")]
    for name in TARGET_HARDWARE:
        (a,) = [k for c in first.hardware[name].configs.values() for k in c.kernels]
        (b,) = [k for c in again.hardware[name].configs.values() for k in c.kernels]
        assert (a.key, a.resources, a.artifacts) == (b.key, b.resources, b.artifacts)


def test_a_candidate_that_differs_only_in_params_shares_the_compiles(seed_reports, compile_cache):
    task = load_task(REPO / "experiments/tasks/relu.yaml")
    source = task.seed_sources()[0][1]
    assert '"BLOCK": [256, 512]' in source
    edited = source.replace('"BLOCK": [256, 512]', '"BLOCK": [256, 1024, 2048]')     # a search's PARAMS edit
    assert code_identity(edited) == code_identity(source)
    sigs = capture_task_signatures(edited, task, [default_config(parse_param_space(edited))])
    again = compile_candidate(edited, sigs, TARGET_HARDWARE, cache=compile_cache)
    assert again.cache_misses == 0 and again.cache_hits == 3 and again.job == {}
    # other code, or code that could read PARAMS, is another identity
    assert code_identity(source.replace("tl.where(x > 0, x, 0.0)", "tl.maximum(x, 0.0)")) != code_identity(source)
    reads = source + "\nWIDEST = max(PARAMS['BLOCK'])\n"
    assert code_identity(reads) == source_hash(reads)
    assert code_identity(reads.replace("[256, 512]", "[256, 1024]")) != code_identity(reads)


def test_cached_only_reports_the_configs_whose_launches_are_compiled_and_compiles_nothing(tmp_path):
    task = load_task(REPO / "experiments/tasks/relu.yaml")
    source = task.seed_sources()[0][1]
    space = parse_param_space(source)
    (known,) = capture_task_signatures(source, task, [default_config(space)]).values()
    (new,) = capture_task_signatures(source, task, [{**default_config(space), "BLOCK": 512}]).values()
    assert new != known
    cache = CompileCache(tmp_path)
    assert compile_candidate(source, {"known": known}, ["h100"], cache=cache).cache_misses == 1
    writes = cache.stats()["writes"]
    report = compile_candidate(source, {"known": known, "new": new}, ["h100"], cache=cache, cached_only=True)
    assert list(report.hardware["h100"].configs) == ["known"]            # "new" needs a compile: left out
    assert report.job == {} and report.cache_misses == 0 and report.cache_hits == 1
    assert cache.stats()["writes"] == writes and report.hardware["h100"].configs["known"].ok
    # with *known*, only those compile keys count (one verify's own compiles)
    key = report.hardware["h100"].configs["known"].kernels[0].key
    assert list(compile_candidate(source, {"known": known}, ["h100"], cache=cache, cached_only=True,
                                  known=set()).hardware["h100"].configs) == []
    assert list(compile_candidate(source, {"known": known}, ["h100"], cache=cache, cached_only=True,
                                  known={key}).hardware["h100"].configs) == ["known"]


def test_report_round_trips_through_json(seed_reports):
    report = seed_reports[("cross_entropy", "cross_entropy_naive.py")]
    data = json.loads(json.dumps(report.to_dict()))
    assert CompileReport.from_dict(data).to_dict() == report.to_dict()
    (cfg,) = report.hardware["h100"].configs.values()
    assert [k.kernel for k in cfg.kernels] == ["row_loss_kernel", "mean_kernel"]


def test_compiler_error_is_reported_per_hardware(compile_cache):
    import torch
    sigs = capture_module(KERNELS / "small_dot.py", [torch.empty((8, 8), dtype=torch.float16)] * 2)
    source = (KERNELS / "small_dot.py").read_text()
    report = compile_candidate(source, sigs, TARGET_HARDWARE, cache=compile_cache)
    for name in ("h100", "a100"):
        hw = report.hardware[name]
        assert hw.status == "error"
        assert "Input shapes should have M >= 1, N >= 1 and K >= 16" in hw.reason
        assert "tl.dot(a, b)" in hw.reason                      # the source line, with a caret under it
    assert report.hardware["mi300x"].status == "ok"          # AMD lowers small dots with FMAs
    assert report.compiled_anywhere
    nvidia_only = compile_candidate(source, sigs, ["h100"], cache=compile_cache)
    assert not nvidia_only.compiled_anywhere and nvidia_only.cache_misses == 0       # errors are cached too
    assert nvidia_only.failure_reason.startswith("h100 (cuda:90:32): config default: small_dot_kernel: "
                                                 "CompilationError")


def test_huge_block_spills_and_asm(compile_cache, tmp_path):
    import torch
    source = (KERNELS / "row_softmax.py").read_text()
    sigs = capture_module(KERNELS / "row_softmax.py", [torch.empty((4, 32768))],
                          {"BLOCK_N": 32768, "num_warps": 4, "num_stages": 1})
    report = compile_candidate(source, sigs, ["h100", "mi300x"], cache=compile_cache)
    (kernel,) = report.hardware["h100"].configs["default"].kernels
    res = kernel.resources
    assert res.stack_bytes > 0 and res.spill_store_bytes > 0 and res.spilled
    assert res.mix_source == "sass" and res.spill_instructions > 0        # spills: SASS disassembled
    assert res.global_load_bits == {128: 64} and res.sfu_instructions >= 256
    assert "B spilled" in res.summary()
    files = write_asm(report, tmp_path / "asm", cache=compile_cache)
    names = sorted(str(p.relative_to(tmp_path / "asm")) for p in files)
    assert names == ["h100/resources.json", "h100/row_softmax_kernel.ptx", "h100/row_softmax_kernel.sass",
                     "mi300x/resources.json", "mi300x/row_softmax_kernel.amdgcn"]
    assert "STL" in (tmp_path / "asm/h100/row_softmax_kernel.sass").read_text()
    summary = json.loads((tmp_path / "asm/h100/resources.json").read_text())
    assert summary["kernels"][0]["resources"]["stack_bytes"] == res.stack_bytes


def test_shared_memory_limit_makes_a_config_invalid_on_smaller_gpus(compile_cache):
    import torch
    source = (KERNELS / "big_tile_matmul.py").read_text()
    a = torch.empty((1024, 1024), dtype=torch.float16)
    sigs = capture_module(KERNELS / "big_tile_matmul.py", [a, a])
    report = compile_candidate(source, sigs, ["h100", "a100", "mi300x"], cache=compile_cache)
    shared = {h: report.hardware[h].configs["default"].kernels[0].resources.shared_bytes for h in report.hardware}
    assert shared == {"h100": 4 * 49152, "a100": 3 * 49152, "mi300x": 3 * 49152}   # stages buffered per target
    assert report.hardware["h100"].configs["default"].kernels[0].resources.tensor_core == "wgmma"
    assert report.hardware["h100"].status == report.hardware["a100"].status == "ok"
    mi300x = report.hardware["mi300x"]
    assert mi300x.status == "error" and "out of resources on mi300x" in mi300x.reason
    assert "needs 147456 B of shared memory per program, the hardware allows 65536 B" in mi300x.reason


def test_kernels_are_shared_out_to_two_jobs_largest_first():
    from kernelfoundry.compiler.gate import share_out
    weight = {"conv": 40.0, "norm": 12.0, "add": 3.0, "relu": 3.0, "pool": 9.0, "sum": 8.0}
    groups = share_out(list(weight), weight)
    assert sorted(k for g in groups for k in g) == sorted(weight) and len(groups) == 2
    loads = sorted(sum(weight[k] for k in g) for g in groups)
    assert loads == [35.0, 40.0]                       # the conv alone against the rest
    assert all(g == [k for k in weight if k in g] for g in groups)    # each group in the callers' order
    assert share_out(["only"], {}) == [["only"]] and share_out([], {}) == []


def test_a_batch_of_compiles_runs_in_as_many_jobs_as_servers_wait_and_every_kernel_gets_its_answer(tmp_path):
    import time

    from kernelfoundry.compiler import prestart_compile_servers
    from kernelfoundry.compiler.gate import JOBS
    from kernelfoundry.compiler.jobrun import JOB_ENV, JOB_MODULE
    from kernelfoundry.sandbox import idle_fork_servers
    task = load_task(REPO / "experiments/tasks/gemm_sigmoid_sum_lse.yaml")
    source = next(s for _, s in task.seed_sources())
    sigs = capture_task_signatures(source, task, [default_config(parse_param_space(source))])
    prestart_compile_servers(JOBS)
    deadline = time.monotonic() + 180
    while idle_fork_servers(JOB_MODULE, JOB_ENV) < JOBS and time.monotonic() < deadline:
        time.sleep(0.2)
    assert idle_fork_servers(JOB_MODULE, JOB_ENV) >= JOBS
    report = compile_candidate(source, sigs, ["h100", "a100"], cache=tmp_path / "cache")
    assert report.cache_misses >= 2 and report.job["jobs"] == JOBS and report.job["attempts"] == JOBS
    for name in ("h100", "a100"):
        assert report.hardware[name].status == "ok", report.summary()
    alone = compile_candidate(source, sigs, ["h100", "a100"], cache=tmp_path / "spawned", mode="spawn")
    assert alone.job["jobs"] == 1 and alone.hardware["h100"].status == "ok"     # no fork servers: one job
