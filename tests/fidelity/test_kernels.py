"""The Liger-style dataset kernels pass every verifier gate, and their trace caches are fresh."""

import pytest

from kernelfoundry.evaluate.pipeline import verify
from kernelfoundry.fidelity.dataset import load_dataset
from kernelfoundry.fidelity.traces import load_cached
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
