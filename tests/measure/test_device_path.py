"""The whole device path on a CPU with the fake timer: top-k configs, both numbers stored, measured objective."""

import math
import sqlite3

import pytest
import torch

from kernelfoundry.measure.device import resolve_device
from kernelfoundry.measure.measurer import merge_verdict
from kernelfoundry.search.archive import KernelArchive
from kernelfoundry.store import RunStore

DRAM = 1.25


@pytest.fixture(scope="module")
def measured_verdict():
    from kernelfoundry.evaluate import VerifyOptions
    from kernelfoundry.search.workers import KernelWorker
    from kernelfoundry.task import load_task
    task = load_task("experiments/tasks/relu.yaml")
    spec = resolve_device("auto", top_k=2, env={"KERNELFOUNDRY_FAKE_DEVICE": f'{{"factors": {{"dram": {DRAM}}}}}'})
    worker = KernelWorker(task.to_dict(), ["h100"], {"type": "builtin"}, VerifyOptions(compile=False), device={"spec": spec})
    return worker.verify(task.seeds[0].read_text())


def test_worker_stores_predicted_and_measured(measured_verdict):
    out = measured_verdict
    rec = out["measured"]
    assert out["passed"] and rec["passed"] and out["gates"][-1]["name"] == "device"
    assert rec["k"] == 2 and rec["device"] == "fake (CPU interpreter)" and rec["torch_version"] == torch.__version__
    shape = rec["shapes"][0]
    assert len(shape["configs"]) == 2                                  # the model's 2 fastest configs were timed
    assert [c["predicted_s"] for c in shape["configs"]] == sorted(c["predicted_s"] for c in shape["configs"])
    for c in shape["configs"]:
        assert c["bound"] == "dram"
        assert c["measured_s"] == pytest.approx(DRAM * (c["predicted_s"] - c["launch_s"]) + c["launch_s"])
    assert shape["speedup"] == pytest.approx(shape["eager_measured_s"] / shape["measured_s"])
    assert out["objective"] == pytest.approx(rec["objective"])          # the search sees the measured speedup
    assert out["predicted_objective"] != pytest.approx(out["objective"])
    assert out["predicted_objective"] == pytest.approx(shape["eager_predicted_s"] / shape["predicted_s"], rel=0.05)


def test_store_and_archive_use_the_measured_objective(tmp_path, measured_verdict):
    out = measured_verdict
    with RunStore(tmp_path / "run.sqlite") as store:
        cid = store.add_candidate({"id": 0, "parent_ids": [], "mutator": "seed", "kind": "seed", "description": "",
                                   "source": "x", "passed": True, "gate": None, "reason": "", "gates": out["gates"],
                                   "objective": out["objective"], "predicted_objective": out["predicted_objective"],
                                   "measured": out["measured"], "hardware": out["hardware"], "archive_status": 0,
                                   "llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0,
                                   "seconds": 0.0, "verify_seconds": 0.0, "descriptors": out["descriptors"]})
        row = store.get_candidate(cid)
    assert row.measured["shapes"][0]["configs"] == out["measured"]["shapes"][0]["configs"]
    assert row.predicted_objective == pytest.approx(out["predicted_objective"])
    archive = KernelArchive()
    archive.add(row.id, row.source, row.objective, row.descriptors)
    assert archive.best.objective == pytest.approx(out["measured"]["objective"])


def test_a_refuted_kernel_fails_the_device_gate():
    verdict = {"passed": True, "gate": None, "reason": "", "gates": [{"name": "model", "passed": True}],
               "objective": 2.0}
    out = merge_verdict(verdict, {"passed": False, "reason": "wrong on the device: output 0 differs"})
    assert not out["passed"] and out["gate"] == "device" and "differs" in out["reason"]
    assert out["objective"] == 2.0 and out["predicted_objective"] == 2.0


def test_old_run_stores_stay_readable(tmp_path):
    path = tmp_path / "old.sqlite"
    with RunStore(path) as store:
        store.conn.execute("CREATE TABLE c2 AS SELECT * FROM candidates")
    conn = sqlite3.connect(path)                    # an old store: the candidates table without the new columns
    conn.executescript("DROP TABLE candidates; CREATE TABLE candidates AS SELECT * FROM c2; DROP TABLE c2;"
                       "ALTER TABLE candidates DROP COLUMN measured; ALTER TABLE candidates DROP COLUMN "
                       "predicted_objective;")
    conn.execute("INSERT INTO candidates(id, created_at, parent_ids, mutator, kind, description, passed, reason, "
                 "gates, hardware, archive_status, llm_calls, prompt_tokens, completion_tokens, cost_usd, seconds, "
                 "verify_seconds, objective) VALUES (0, 0, '[]', 'seed', 'seed', '', 1, '', '[]', '{}', 0, 0, 0, 0, "
                 "0, 0, 0, 1.5)")
    conn.commit()
    conn.close()
    with RunStore(path, create=False) as store:
        row = store.get_candidate(0)
        assert row.objective == 1.5 and row.measured is None and row.predicted_objective is None
        assert math.isfinite(row.objective)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_one_candidate_measures_within_5_s():
    from kernelfoundry.evaluate.pipeline import verify
    from kernelfoundry.measure.measurer import DeviceMeasurer
    from kernelfoundry.task import load_task
    task = load_task("experiments/tasks/relu.yaml")
    source = task.seeds[0].read_text()
    result = verify(task, source, ["h100"], compile=False)
    spec = resolve_device("cuda")
    rec = DeviceMeasurer(spec).measure(task, source, result, "h100", 0)
    assert rec["passed"], rec["reason"]
    assert rec["seconds"] <= 5.0
    assert all(c.get("measured_s") for s in rec["shapes"] for c in s["configs"])
