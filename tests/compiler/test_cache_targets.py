"""The artefact cache (atomic entries, concurrent writers, location), targets, parsers, the bench smoke run."""

from __future__ import annotations

import threading

import pytest

from kernelfoundry.compiler.amd import amd_resources
from kernelfoundry.compiler.cache import CompileCache, compile_key, default_cache_dir, read_artifact
from kernelfoundry.compiler.nvidia import parse_ptxas_log, parse_resource_usage, ptx_mix, sass_mix
from kernelfoundry.compiler.targets import NO_BACKEND, parse_target, resolve_target
from kernelfoundry.errors import HardwareError
from kernelfoundry.perfmodel.hardware import spec_from_dict, load_hardware


def test_cache_entry_is_atomic_and_first_writer_wins(tmp_path):
    cache = CompileCache(tmp_path)
    key = compile_key("src", "{}", "cuda:90:32", "3.9.0", "ptxas 13.4")
    assert cache.get(key) is None
    barrier = threading.Barrier(4)
    entries = []

    def writer(i: int) -> None:
        barrier.wait()
        entries.append(cache.put(key, {"ok": True, "writer": i}, {"ptx": f"ptx {i}".encode(), "cubin": bytes([i])}))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winner = cache.get(key)
    assert {e.meta["writer"] for e in entries} == {winner.meta["writer"]}      # everyone reads the same entry
    assert read_artifact(winner.files["ptx"]) == f"ptx {winner.meta['writer']}".encode()
    assert winner.files["ptx"].endswith(".ptx.gz") and read_artifact(winner.files["cubin"]) == bytes([winner.meta["writer"]])
    leftovers = [p.name for p in winner.path.parent.iterdir() if p.name != key]
    assert leftovers == [] and cache.stats()["writes"] == 1
    cache.add_file(winner, "sass", b"STL")
    cache.update_meta(winner, note="x")
    again = cache.peek(key)
    assert read_artifact(again.files["sass"]) == b"STL" and again.meta["note"] == "x"
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1 and cache.stats()["hit_rate"] == 0.5


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.setenv("KF_COMPILE_CACHE", str(tmp_path / "shared"))
    assert default_cache_dir() == tmp_path / "shared" and CompileCache().root == tmp_path / "shared"
    monkeypatch.delenv("KF_COMPILE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg/kernelfoundry/compile"
    assert CompileCache(tmp_path / "explicit").root == tmp_path / "explicit"
    with pytest.raises(ValueError, match="not a compile cache key"):
        CompileCache(tmp_path).get("../../etc")


def test_targets_of_the_hardware_library():
    assert resolve_target("h100")[0] == resolve_target("h200")[0] == parse_target("cuda:90:32")
    assert parse_target("cuda:90:32").sm_name == "sm_90a" and parse_target("cuda:80:32").sm_name == "sm_80"
    assert resolve_target("mi300x")[0].arch == "gfx942"
    for name in ("max1550", "ascend910b2"):
        target, why = resolve_target(name)
        assert target is None and why.startswith(NO_BACKEND)
    with pytest.raises(HardwareError, match="unknown hardware 'b300'"):
        resolve_target("b300")


def test_hardware_file_triton_target_is_validated():
    import yaml
    data = yaml.safe_load(open(load_hardware("h100").path))
    with pytest.raises(HardwareError, match="field 'triton_target' must look like 'cuda:90:32'"):
        spec_from_dict({**data, "triton_target": "sm_90"}, source="x.yaml")
    assert spec_from_dict({k: v for k, v in data.items() if k != "triton_target"}).triton_target == ""


# Lines as ptxas 13.4 / cuobjdump 13.1 / nvdisasm 13.1 print them for the whole-row softmax at BLOCK_N 32768.
PTXAS_LOG = """ptxas-blackwell info    : Function properties for row_softmax_kernel
    2408 bytes stack frame, 4216 bytes spill stores, 5792 bytes spill loads
ptxas-blackwell info    : Used 32 registers, used 1 barriers, 2408 bytes cumulative stack size
"""
RES_USAGE = """ Function row_softmax_kernel:
  REG:32 STACK:2408 SHARED:1024 LOCAL:0 CONSTANT[0]:568 TEXTURE:0 SURFACE:0 SAMPLER:0
"""
SASS = """        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/              @!P0 LDG.E.128 R4, desc[UR6][R2.64] ;
        /*0020*/                   STL.128 [R1+0x10], R4 ;
        /*0030*/                   LDL.LU.128 R8, [R1+0x10] ;
        /*0040*/                   MUFU.EX2 R9, R9 ;
        /*0050*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], R24 ;
        /*0060*/              @P1 STG.E.U16 desc[UR6][R2.64], R0 ;
"""


def test_parsers_on_tool_output():
    assert parse_ptxas_log(PTXAS_LOG) == {"stack_bytes": 2408, "spill_store_bytes": 4216, "spill_load_bytes": 5792,
                                          "registers": 32}
    assert parse_resource_usage(RES_USAGE) == {"registers": 32, "stack_bytes": 2408, "static_shared_bytes": 1024,
                                               "local_bytes": 0}
    mix = sass_mix(SASS)
    assert (mix["spill_instructions"], mix["sfu_instructions"], mix["tensor_core"], mix["instructions"]) == \
        (2, 1, "wgmma", 7)
    assert mix["global_load_bits"] == {128: 1} and mix["global_store_bits"] == {16: 1}
    ptx = ("\t@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];\n"
           "\tcp.async.cg.shared.global [ %r31 + 0 ], [ %rd15 + 0 ], 0x10, %r32;\n"
           "\tst.global.b16 [ %rd2 + 0 ], %rs1;\n\tex2.approx.f32 %f2, %f1;\n\tdiv.full.f32 %f3, %f2, %f1;\n"
           "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f1};\n\t.reg .b32 %r<9>;\n")
    mix = ptx_mix(ptx)
    assert mix["global_load_bits"] == {128: 2} and mix["async_copy_instructions"] == 1
    assert mix["global_store_bits"] == {16: 1} and mix["sfu_instructions"] == 2
    assert (mix["tensor_core"], mix["mma_instructions"], mix["instructions"]) == ("mma.sync", 1, 6)


AMDGCN = """\t.type\tk,@function
k:
\tbuffer_load_dwordx4 v[0:3], v4, s[0:3], 0 offen
\tv_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
\tv_exp_f32_e32 v1, v1
\tscratch_store_dword off, v5, s0
\tglobal_store_short v[6:7], v1, off
\ts_endpgm
.Lfunc_end0:
; TotalNumSgprs: 40
; NumVgprs: 120
; NumAgprs: 16
; TotalNumVgprs: 136
; ScratchSize: 8
; Occupancy: 3
    .sgpr_spill_count: 2
    .vgpr_spill_count: 1
"""


def test_amdgcn_resources():
    res = amd_resources(AMDGCN, {"num_warps": 4, "shared": 4096}, 64)
    assert (res.registers, res.accum_registers, res.scalar_registers, res.stack_bytes) == (136, 16, 40, 8)
    assert (res.spilled_registers, res.spill_instructions, res.occupancy_waves) == (3, 1, 3)
    assert (res.tensor_core, res.mma_instructions, res.sfu_instructions, res.instructions) == ("mfma", 1, 1, 6)
    assert res.global_load_bits == {128: 1} and res.global_store_bits == {16: 1}
    assert res.threads_per_program == 256 and res.shared_bytes == 4096
    with pytest.raises(ValueError, match="no kernel summary"):
        amd_resources("\tv_nop\n", {"num_warps": 4, "shared": 0}, 64)


def test_bench_smoke(capsys):
    from pathlib import Path
    import importlib.util
    path = Path(__file__).resolve().parents[2] / "experiments/bench_compile.py"
    spec = importlib.util.spec_from_file_location("bench_compile", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "| relu | 1 | 1 |" in out and "every candidate compiled on every target" in out
    assert "cuda:90:32" in out
