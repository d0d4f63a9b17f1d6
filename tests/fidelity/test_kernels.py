"""The dataset kernels pass every verifier gate, their trace caches are fresh, and an autotuned row is
predicted as the fastest of its configs."""

import dataclasses

import pytest
import yaml

from kernelfoundry.evaluate.pipeline import verify
from kernelfoundry.fidelity.dataset import FidelityError, load_dataset
from kernelfoundry.fidelity.predict import InvalidConfig, kernel_prediction
from kernelfoundry.fidelity.traces import get_traces, load_cached
from kernelfoundry.perfmodel import HardwareArrays, load_hardware, unaligned_bytes
from kernelfoundry.task import load_task

from .common import DATASETS, FIDELITY_DIR

KERNELS = sorted(p.stem for p in (FIDELITY_DIR / "liger").glob("*.py"))


@pytest.mark.parametrize("name", KERNELS)
def test_liger_style_kernel_passes_verify(name):
    task = load_task(FIDELITY_DIR / "liger" / f"{name}.yaml")
    result = verify(task, (FIDELITY_DIR / "liger" / f"{name}.py").read_text(), ["a100-pcie"])
    assert result.passed, f"{result.gate}: {result.reason}"
    assert {t.shape_index for t in result.traces} == set(range(len(task.target_shapes)))


@pytest.mark.parametrize("path", [p for p in DATASETS if load_dataset(p).predictor == "kernel"], ids=lambda p: p.stem)
def test_every_kernel_row_has_a_fresh_trace_cache(path):
    ds = load_dataset(path)
    stale = sorted({r.task.name for r in ds.rows if load_cached(FIDELITY_DIR, r.task, r.kernel) is None})
    assert not stale, (f"stale or missing trace caches for {stale}: regenerate with "
                       f"python -m kernelfoundry.fidelity experiments/fidelity/{path.name} --refresh-traces")


def test_tutorial_gemm_passes_verify_with_every_autotune_config(tmp_path):
    """The tutorial GEMM on its task's check shapes and one small target shape with edge tiles (every
    config traced; the dataset's own target shapes are traced by the fidelity command)."""
    src = FIDELITY_DIR / "triton_tutorial"
    data = yaml.safe_load((src / "matmul.yaml").read_text())
    data["shapes"]["target"] = [{"M": 320, "N": 192, "K": 160}]
    (tmp_path / "matmul.py").write_text((src / "matmul.py").read_text())
    (tmp_path / "matmul.yaml").write_text(yaml.safe_dump(data))
    task = load_task(tmp_path / "matmul.yaml")
    result = verify(task, (tmp_path / "matmul.py").read_text(), ["a100-pcie"], max_kernel_configs=16, compile=False)
    assert result.passed, f"{result.gate}: {result.reason}"
    assert len({t.config["TILE"] for t in result.traces}) == 16


def _smem_bytes(config):
    """Shared memory of the tile's num_stages buffers of A and B (fp16)."""
    bm, bn, bk = (int(v) for v in config["TILE"].split("x"))
    return config["num_stages"] * (bm * bk + bk * bn) * 2


def test_autotuned_row_is_the_fastest_config_the_model_finds_valid():
    ds = load_dataset(FIDELITY_DIR / "triton_tutorial_a100.yaml")
    row = ds.rows[-1]
    traces = get_traces(FIDELITY_DIR, row.task, row.kernel, ds.hardware, write=False)[0]
    assert len(traces) == 16 * len(ds.rows) and not any(t.provisional for t in traces)   # every pair, dense
    spec = load_hardware(ds.hardware)
    hw, unaligned = HardwareArrays([spec]), unaligned_bytes(load_task(row.task, check_files=False), row.shape)
    single, invalid = {}, []
    for config in row.configs:
        try:
            single[config["TILE"]] = kernel_prediction(dataclasses.replace(row, config=config, configs=()),
                                                       traces, hw, unaligned).predicted_ms
        except InvalidConfig:
            invalid.append(config)
    # the configs the tuner cannot compile on an A100 (their buffers exceed 163 KB per block) are skipped
    assert invalid and all(_smem_bytes(c) > spec.smem_bytes_per_program for c in invalid)
    assert all(_smem_bytes(c) <= spec.smem_bytes_per_program for c in row.configs if c["TILE"] in single)
    best = kernel_prediction(row, traces, hw, unaligned)
    assert best.predicted_ms == min(single.values())
    winner = min(single, key=single.get)
    assert best.breakdown[0].startswith(f"fastest of 16 configs, {len(invalid)} invalid on a100-pcie: TILE={winner},")
    with pytest.raises(InvalidConfig, match=f"every one of its {len(invalid)} configs invalid on a100-pcie"):
        kernel_prediction(dataclasses.replace(row, configs=tuple(invalid)), traces, hw, unaligned)
    untraced = {"TILE": "16x16x16", "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 2}
    with pytest.raises(FidelityError, match="no trace of matmul.py"):       # never skipped as if invalid
        kernel_prediction(dataclasses.replace(row, configs=row.configs + (untraced,)), traces, hw, unaligned)
