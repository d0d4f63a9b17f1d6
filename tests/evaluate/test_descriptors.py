"""Descriptors from traces: known kernel variants land in different archive cells."""

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

import math
import tempfile
from pathlib import Path

import pytest

from kernelfoundry.candidate import HINT_PARAMS, parse_param_space
from kernelfoundry.evaluate.judge.descriptors import (BIN_LABELS, DESCRIPTOR_BINS, DESCRIPTOR_NAMES, DESCRIPTOR_RANGES,
                                                compute_descriptors, main_launch)
from kernelfoundry.records import ConfigTrace, LaunchTrace, TensorTraffic
from kernelfoundry.evaluate.inprocess import trace_trusted
from kernelfoundry.task import load_task

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"
SOFTMAX = load_task(ROOT / "experiments" / "tasks" / "softmax.yaml")
MATMUL = load_task(ROOT / "experiments" / "tasks" / "matmul.yaml")


def cell(descriptors):
    out = []
    for name, (lo, hi), bins in zip(DESCRIPTOR_NAMES, DESCRIPTOR_RANGES, DESCRIPTOR_BINS):
        out.append(min(bins - 1, int((descriptors[name] - lo) / (hi - lo) * bins)))
    return tuple(out)


def descriptors_of(path, task, config, hints=None):
    source = path.read_text()
    space = parse_param_space(source)
    hints = hints or {name: space[name][0] for name in HINT_PARAMS if name in space}
    gate, traces = trace_trusted(source, task, [config], hints=hints, seed=0, trace_programs=2)
    assert gate.passed, gate.reason
    return compute_descriptors(traces[0], {**config, **hints})


def test_fixed_grid_and_labels():
    assert DESCRIPTOR_NAMES == ("tiling", "memory_pattern")
    assert DESCRIPTOR_RANGES == ((0.0, 24.0), (0.0, 6.0)) and DESCRIPTOR_BINS == (12, 6)
    assert [len(BIN_LABELS[n]) for n in DESCRIPTOR_NAMES] == list(DESCRIPTOR_BINS)
    assert BIN_LABELS["tiling"][0] == "1-4 out/prog" and BIN_LABELS["tiling"][5] == "1K-4K out/prog"


def test_softmax_variants_land_in_different_cells():
    naive = descriptors_of(SOFTMAX.seeds[0], SOFTMAX, {"BLOCK_N": 256})
    online = descriptors_of(KERNELS / "softmax_online.py", SOFTMAX, {"BLOCK_N": 1024})
    single = descriptors_of(KERNELS / "softmax_single.py", SOFTMAX, {})
    for d in (naive, online, single):
        assert d["tiling"] == pytest.approx(math.log2(393216))
    assert (naive["memory_pattern"], online["memory_pattern"], single["memory_pattern"]) == (3.5, 2.5, 1.5)
    assert len({cell(naive), cell(online), cell(single)}) == 3


def test_matmul_variants_land_in_different_cells():
    naive = descriptors_of(MATMUL.seeds[0], MATMUL, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16})
    tiled = descriptors_of(KERNELS / "matmul_grouped.py", MATMUL,
                           {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 1},
                           hints={"num_warps": 4, "num_stages": 1})
    grouped = descriptors_of(KERNELS / "matmul_grouped.py", MATMUL,
                             {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8},
                             hints={"num_warps": 4, "num_stages": 3})
    assert (naive["tiling"], tiled["tiling"], grouped["tiling"]) == (8.0, 12.0, 12.0)
    assert (naive["memory_pattern"], tiled["memory_pattern"], grouped["memory_pattern"]) == (4.5, 4.5, 5.5)
    assert len({cell(naive), cell(tiled), cell(grouped)}) == 3


def _launch(name, stores, loads, sectors, unique, programs=64, dots=None, footprint=None):
    traffic = {"x": TensorTraffic("fp32", 4, 1 << 30, load_bytes=loads, load_sectors=sectors,
                                  unique_load_bytes=unique),
               "y": TensorTraffic("fp32", 4, 1 << 30, store_bytes=stores, store_sectors=stores / 32,
                                  unique_store_bytes=stores)}
    return LaunchTrace(kernel=name, grid=(programs, 1, 1), num_programs=programs, sampled_programs=[0],
                       traffic=traffic, dot_flops=dots or {}, footprint=footprint or {})


def test_rules_on_synthetic_traces():
    strided = _launch("k", stores=1024, loads=1024, sectors=256, unique=8192)     # 4 of 32 bytes used per sector
    assert compute_descriptors(ConfigTrace(0, {}, {}, [strided]), {})["memory_pattern"] == 0.5
    tiny = _launch("k", stores=2, loads=32, sectors=1, unique=32)
    assert compute_descriptors(ConfigTrace(0, {}, {}, [tiny]), {})["tiling"] == 0.0
    small, big = _launch("small", 64, 64, 2, 64), _launch("big", 4096, 4096, 128, 4096)
    assert main_launch(ConfigTrace(0, {}, {}, [small, big])).kernel == "big"
    too_few = _launch("k", 4096, 4096, 128, 4096, dots={"fp16": 1.0},
                      footprint={"a": [[1, 1], [2, 1], [4, 1], [8, 2]], "b": [[1, 1], [2, 2], [4, 3], [8, 3]]})
    assert compute_descriptors(ConfigTrace(0, {}, {}, [too_few]), {})["memory_pattern"] == 4.5
