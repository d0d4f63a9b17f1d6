"""Dataset and thresholds files: the loader accepts the committed files and names bad fields."""

import pytest
import yaml

from kernelfoundry.fidelity.dataset import (FidelityError, is_dataset_file, load_dataset, load_thresholds)
from kernelfoundry.fidelity.__main__ import dataset_paths

from .common import FIDELITY_DIR, DATASETS


def test_committed_datasets_load():
    names = {load_dataset(p).name for p in DATASETS}
    assert {"kernelbench_h100", "liger_a100", "liger_a100_eager", "liger_h100nvl", "liger_h100nvl_eager",
            "triton_tutorial_a100", "triton_tutorial_a100_eager"} <= names
    kb = load_dataset(FIDELITY_DIR / "kernelbench_h100.yaml")
    assert len(kb.rows) == 137 and kb.predictor == "eager" and kb.hardware == "h100"
    assert sum(r.weight < 1 for r in kb.rows) == 3                  # the three noisy problems
    lg = load_dataset(FIDELITY_DIR / "liger_a100.yaml")
    assert lg.predictor == "kernel" and all(r.task.is_file() and r.kernel.is_file() for r in lg.rows)
    assert all(load_thresholds(load_dataset(p)) for p in DATASETS)


@pytest.mark.parametrize("stem", ["liger_h100nvl", "liger_h100nvl_eager"])
def test_h100_nvl_rows_mirror_the_a100_rows(stem):
    """Same benchmark, same shapes and launch rules: only the GPU and the measured numbers differ."""
    nvl = load_dataset(FIDELITY_DIR / f"{stem}.yaml")
    a100 = load_dataset(FIDELITY_DIR / f"{stem.replace('h100nvl', 'a100')}.yaml")
    assert nvl.hardware == "h100-nvl" and nvl.timing == "do_bench" and nvl.predictor == a100.predictor
    assert nvl.source["commit"] == "3534d4461ca89319e29c890c1a4c20cb2a615d5f"
    assert [r.id for r in nvl.rows] == [r.id for r in a100.rows] and len(nvl.rows) == 25
    for n, a in zip(nvl.rows, a100.rows):
        assert (n.kind, n.task, n.kernel, n.shape, n.config, n.reference, n.inputs) == \
               (a.kind, a.task, a.kernel, a.shape, a.config, a.reference, a.inputs), n.id
        assert n.spread_ms[0] <= n.measured_ms <= n.spread_ms[1] and n.measured_ms != a.measured_ms


def test_cli_path_expansion_skips_tasks_thresholds_and_kernels():
    paths = dataset_paths([str(p) for p in sorted(FIDELITY_DIR.iterdir())])
    assert sorted(p.name for p in paths) == sorted(p.name for p in DATASETS)
    assert not is_dataset_file(FIDELITY_DIR / "kernelbench_h100.thresholds.yaml")
    assert not is_dataset_file(FIDELITY_DIR / "liger" / "rope.yaml")


def _write(tmp_path, name="ds", **changes):
    data = {"dataset": name, "predictor": "eager", "hardware": "h100", "timing": "kernelbench",
            "rows": [{"id": "a", "kind": "elementwise", "measured_ms": 1.0,
                      "reference": "def reference(x):\n    return x + 1\n",
                      "inputs": {"x": {"shape": [4, 4], "dtype": "float32"}}}]}
    for k, v in changes.items():
        if v is None:
            data.pop(k)
        else:
            data[k] = v
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("changes,pattern", [
    ({"predictor": "magic"}, r"ds.yaml: field 'predictor' must be one of eager, kernel"),
    ({"timing": "stopwatch"}, r"field 'timing' must be one of"),
    ({"origin": "guess"}, r"field 'origin' must be one of measurement, estimate; got 'guess'"),
    ({"dataset": "other"}, r"field 'dataset' must equal the file's stem 'ds'"),
    ({"bogus": 1}, r"unknown field\(s\) 'bogus'"),
    ({"rows": []}, r"field 'rows' must be a non-empty list"),
    ({"rows": [{"id": "a", "kind": "x", "measured_ms": -1, "reference": "def reference(x): return x",
                "inputs": {"x": {"shape": [2]}}}]}, r"field 'rows\[0\].measured_ms' must be a positive number"),
    ({"rows": [{"id": "a", "kind": "x", "measured_ms": 1, "reference": "def reference(x): return x",
                "inputs": {"x": {"shape": [2], "dtype": "float8"}}}]}, r"rows\[0\].inputs.x.dtype' is 'float8'"),
    ({"predictor": "kernel", "rows": [{"id": "a", "kind": "x", "measured_ms": 1, "task": "nope.yaml",
                                       "kernel": "k.py", "shape": {"N": 1}}]}, r"rows\[0\].task' names .*nope.yaml"),
])
def test_loader_errors_name_file_and_field(tmp_path, changes, pattern):
    with pytest.raises(FidelityError, match=pattern):
        load_dataset(_write(tmp_path, **changes))


@pytest.mark.parametrize("fields,pattern", [
    ({"config": {"num_warps": 4}, "configs": [{"num_warps": 4}]}, r"rows\[0\].configs' and 'config' are both given"),
    ({"configs": []}, r"rows\[0\].configs' must be a non-empty list"),
    ({"configs": {"num_warps": 4}}, r"rows\[0\].configs' must be a non-empty list"),
    ({"configs": [{"num_warps": 4}, 8]}, r"rows\[0\].configs\[1\]' must map PARAMS names"),
    ({"configs": [{"num_warps": 4}, {}]}, r"rows\[0\].configs\[1\]' must map PARAMS names"),
    ({"configs": [{"num_warps": 4}, {"num_warps": 4}]}, r"rows\[0\].configs\[1\]' repeats the config"),
    ({"config": [4]}, r"rows\[0\].config' must map PARAMS names"),
])
def test_kernel_row_config_errors_name_the_field(tmp_path, fields, pattern):
    base = FIDELITY_DIR / "liger"
    row = {"id": "a", "kind": "norm", "measured_ms": 1.0, "task": str(base / "rms_norm.yaml"),
           "kernel": str(base / "rms_norm.py"), "shape": {"M": 2048, "H": 1024}, **fields}
    with pytest.raises(FidelityError, match=r"ds.yaml: field '" + pattern):
        load_dataset(_write(tmp_path, predictor="kernel", rows=[row]))


def test_autotuned_rows_load_their_config_list():
    """An autotuned row keeps the tuner's list in order and no single config; other rows are as before."""
    ds = load_dataset(FIDELITY_DIR / "triton_tutorial_a100.yaml")
    assert ds.predictor == "kernel" and ds.hardware == "a100-pcie" and len(ds.rows) == 10
    for row in ds.rows:
        assert row.config == {} and len(row.configs) == 16 and row.configs == ds.rows[0].configs
        assert row.shape["M"] == row.shape["N"] == row.shape["K"]
    assert ds.rows[0].configs[0] == {"TILE": "128x256x64", "GROUP_SIZE_M": 8, "num_warps": 8, "num_stages": 3}
    assert len({tuple(sorted(c.items())) for c in ds.rows[0].configs}) == 16
    assert all(r.configs == () and r.config for r in load_dataset(FIDELITY_DIR / "liger_a100.yaml").rows)


def test_repeated_ids_and_bad_thresholds_are_refused(tmp_path):
    row = {"id": "a", "kind": "x", "measured_ms": 1.0, "reference": "def reference(x):\n    return x\n",
           "inputs": {"x": {"shape": [2]}}}
    with pytest.raises(FidelityError, match=r"rows\[1\].id' repeats the id 'a'"):
        load_dataset(_write(tmp_path, rows=[row, row]))
    ds = load_dataset(_write(tmp_path))
    ds.thresholds_path.write_text("geomean_error_max: 0.5\n")
    with pytest.raises(FidelityError, match=r"ds.thresholds.yaml: field 'geomean_error_max' must be a number in"):
        load_thresholds(ds)
    ds.thresholds_path.write_text("speed: 1\n")
    with pytest.raises(FidelityError, match=r"unknown field 'speed'"):
        load_thresholds(ds)


def test_estimates_are_reported_but_never_made_an_error_band(tmp_path):
    """An ``origin: estimate`` dataset (another model's runtimes) is predicted and compared like any, and
    ``table_from`` makes no band of it; the same rows as measurements make one."""
    from kernelfoundry.fidelity.bands import table_from
    from kernelfoundry.fidelity.crossval import held_out
    from kernelfoundry.fidelity.predict import predict_dataset, row_models
    from kernelfoundry.fidelity.tables import dataset_report
    tables = {}
    for origin in ("measurement", "estimate"):
        folder = tmp_path / origin
        folder.mkdir()
        ds = load_dataset(_write(folder, origin=origin))
        assert ds.measured == (origin == "measurement")
        preds = predict_dataset(ds, write_traces=False)
        assert len(preds) == 1 and preds[0].predicted_ms > 0
        tables[origin] = table_from([(ds, ds.hardware, preds, held_out(ds, row_models(ds)))])
        report = dataset_report(ds, ds.hardware, preds)
        assert ("ESTIMATES of another model, not measurements" in report) == (origin == "estimate")
    assert {b["kind"] for b in tables["measurement"]["bands"]} == {"all", "elementwise"}
    assert tables["estimate"] == {"bands": [], "cross_gpu": []}


def test_committed_estimate_datasets_are_the_gemm_heuristics_sets():
    estimates = {load_dataset(p).name for p in DATASETS if not load_dataset(p).measured}
    assert estimates == {"nvmmh_h100", "nvmmh_a100", "nvmmh_h200"}
