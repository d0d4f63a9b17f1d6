"""Drafts: a KernelBench problem the seed generator cannot lower runs with an LLM, which writes the
first kernel (docs/llm.md, "Drafts"). Scripted LLMs: the replay provider, and litellm's OpenAI-compatible
client against a local HTTP server; all drafts failing; no LLM at all."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.evolve import main as evolve_main
from kernelfoundry.mutate.replay import reset_replay
from kernelfoundry.store import RunStore

#: torch.logcumsumexp: an op the seed generator has no template for (and none is planned)
PROBLEM = '''"""logcumsumexp along the rows of a 2-D activation."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logcumsumexp(x, dim=1)


def get_inputs():
    return [torch.randn(256, 1000)]


def get_init_inputs():
    return []
'''

#: a correct kernel: a running log-sum-exp over the columns, a block of rows per program
GOOD = '''"""logcumsumexp along each row: a block of rows per program, a running log-sum-exp over the columns."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [64, 128], "num_warps": [4], "num_stages": [1]}


@triton.jit
def logcumsumexp_kernel(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_M: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    mask = rows < n_rows
    acc = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    for j in range(0, n_cols):
        x = tl.load(x_ptr + rows * stride_x + j, mask=mask, other=0.0)
        m = tl.maximum(acc, x)
        acc = m + tl.log(tl.exp(acc - m) + tl.exp(x - m))
        tl.store(y_ptr + rows * stride_y + j, acc, mask=mask)


def launch(x, *, BLOCK_M, num_warps, num_stages):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    logcumsumexp_kernel[(triton.cdiv(n_rows, BLOCK_M),)](x, y, n_rows, n_cols, x.stride(0), y.stride(0),
                                                          BLOCK_M=BLOCK_M, num_warps=num_warps, num_stages=num_stages)
    return y
'''

#: computes with torch in launch: refused by the verifier's first (hack) gate
CHEAT = '''import torch
import triton
import triton.language as tl

PARAMS = {"num_warps": [4]}


def launch(x, *, num_warps):
    return torch.logcumsumexp(x, dim=1)
'''
CHEAT2 = CHEAT.replace("return torch.logcumsumexp(x, dim=1)", "return x.exp().cumsum(1).log()")


def reply(source: str, idea: str = "One program per row.") -> str:
    return f"{idea}\n\n```python\n{source}```\n"


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    """The problem file, imported once into a private cache (a sandboxed job)."""
    old = os.environ.get("KERNELFOUNDRY_KB_CACHE")
    root = tmp_path_factory.mktemp("drafts")
    os.environ["KERNELFOUNDRY_KB_CACHE"] = str(root / "cache")
    path = root / "level1" / "logcumsumexp_rows.py"
    path.parent.mkdir()
    path.write_text(PROBLEM)
    from kernelfoundry.kernelbench import load_task_or_problem
    task = load_task_or_problem(path, allow_no_seed=True)
    assert task.seeds == () and "logcumsumexp" in task.no_seed_reason, (
        f"the seed generator now lowers this problem ({task.no_seed_reason!r}): pick an op it cannot")
    yield path
    if old is None:
        os.environ.pop("KERNELFOUNDRY_KB_CACHE", None)
    else:
        os.environ["KERNELFOUNDRY_KB_CACHE"] = old


@pytest.fixture
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _rows(run_dir: Path):
    store = RunStore(run_dir / "run.sqlite")
    try:
        return list(store.iter_candidates()), list(store.iter_llm_calls())
    finally:
        store.close()


def _check_drafts_then_search(run_dir: Path, draft_prompts: list[str]) -> list:
    """Draft 1 failed at the hack gate, draft 2 passed, the second prompt quoted draft 1's reason."""
    rows, _ = _rows(run_dir)
    drafts = [r for r in rows if r.kind == "draft"]
    assert [(r.passed, r.gate) for r in drafts] == [(False, "hack"), (True, None)], \
        [(r.kind, r.gate, r.reason[:200]) for r in rows]
    assert drafts[0].parent_ids == [] and drafts[1].source == GOOD
    assert len(draft_prompts) == 2 and "no starting kernel exists" in draft_prompts[0].lower()
    assert "logcumsumexp" in draft_prompts[0] and "class Model(nn.Module)" in draft_prompts[0]
    assert "cumsum_naive.py" in draft_prompts[0]              # the example: the project's scan seed
    assert "Earlier drafts failed" not in draft_prompts[0]
    reason = " ".join(drafts[0].reason.split())[:120]
    assert "hack gate" in draft_prompts[1] and reason in " ".join(draft_prompts[1].split()), draft_prompts[1]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["finished"] and summary["n_correct"] >= 1 and summary["best_objective"] > 0
    assert summary["drafts"]["count"] == 2 and summary["drafts"]["passed_candidate"] == drafts[1].id
    return rows


def test_replayed_drafts_fix_a_failure_then_search_and_export_a_kernelbench_solution(
        problem, tmp_path, interpreter, ray_local, capsys):
    from kernelfoundry import export
    from kernelfoundry.kernelbench.contract import check_contract
    script = tmp_path / "drafts.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in [
        {"purpose": "draft", "content": reply(CHEAT, "Let torch do it.")},
        {"purpose": "draft", "content": reply(GOOD)},
        # the search goes on from the draft: an edit that does not apply (stored at the mutate gate)
        {"content": "Wider.\n<<<<<<< SEARCH\nPARAMS = {'nothing': [1]}\n=======\nPARAMS = {}\n>>>>>>> REPLACE\n"},
    ]))
    reset_replay()
    run_dir = tmp_path / "run"
    assert evolve_main([str(problem), "--model", f"replay/{script}", "--budget", "3", "--workers", "1",
                        "--no-prompt-evolution", "--out", str(run_dir), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "drafts" in out and "seeded the search" in out
    _, calls = _rows(run_dir)
    prompts = [json.dumps([m["content"] for m in c["messages"]]) for c in calls if c["purpose"] == "draft"]
    rows = _check_drafts_then_search(run_dir, [json.loads(p)[1] for p in prompts])
    later = [r for r in rows if r.kind != "draft"]
    assert len(later) == 1 and later[0].mutator.startswith("llm:replay/") and later[0].gate == "mutate"
    assert later[0].parent_ids[0] in {r.id for r in rows if r.kind == "draft"}

    solutions = tmp_path / "solutions"
    assert export.main([str(run_dir), "--format", "kernelbench", "--out", str(solutions)]) == 0
    manifest = json.loads((solutions / "manifest.json").read_text())
    solution = solutions / manifest["kernels"][0]["file"]
    assert "class ModelNew(Model):" in solution.read_text()
    result = check_contract(solution, problem)
    assert result["ok"], result["reason"]


class ChatServer:
    """An OpenAI-compatible ``/chat/completions`` endpoint on 127.0.0.1 answering from a script."""

    def __init__(self, answers: list[str]):
        self.answers, self.requests = list(answers), []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                server.requests.append({"path": self.path, "body": body})
                text = server.answers[min(len(server.requests), len(server.answers)) - 1]
                data = json.dumps({
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model", ""),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_drafts_through_litellm_against_a_local_openai_compatible_server(problem, tmp_path, interpreter,
                                                                         ray_local):
    server = ChatServer([reply(CHEAT, "Let torch do it."), reply(GOOD)])
    try:
        run_dir = tmp_path / "run"
        # hosted_vllm: litellm's OpenAI-compatible client, which needs no API key
        assert evolve_main([str(problem), "--model", f"hosted_vllm/kf-draft-test,api_base={server.url}",
                            "--budget", "2", "--workers", "1", "--no-prompt-evolution", "--out", str(run_dir),
                            "--quiet"]) == 0
    finally:
        server.close()
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 2
    prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
    _check_drafts_then_search(run_dir, prompts)


def test_when_every_draft_fails_the_run_says_why_and_keeps_them(problem, tmp_path, interpreter, ray_local,
                                                              capsys):
    script = tmp_path / "bad.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in [
        {"content": "I would use a scan, but I give no code."},
        {"content": reply(CHEAT)},
        {"content": reply(CHEAT2)},
    ]))
    reset_replay()
    run_dir = tmp_path / "run"
    assert evolve_main([str(problem), "--model", f"replay/{script}", "--budget", "3", "--workers", "1",
                        "--no-prompt-evolution", "--out", str(run_dir), "--quiet"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no draft of task 'logcumsumexp_rows' passed the verifier: all 3 drafts failed" in err, err
    assert "gate 'hack'" in err and "draft 3 (candidate 2)" in err and "--seed-kernel" in err
    assert str(run_dir / "run.sqlite") in err
    rows, calls = _rows(run_dir)
    assert [(r.kind, r.gate) for r in rows] == [("draft", "mutate"), ("draft", "hack"), ("draft", "hack")]
    assert "no kernel module in the reply" in rows[0].reason
    assert len([c for c in calls if c["purpose"] == "draft"]) == 3
    summary = json.loads((run_dir / "summary.json").read_text())
    assert not summary["finished"] and summary["n_candidates"] == 3 and summary["n_correct"] == 0
    assert summary["drafts"]["count"] == 3 and summary["drafts"]["passed_candidate"] is None


def test_without_an_llm_the_error_names_the_op_and_both_ways_out(problem, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert evolve_main([str(problem), "--out", str(run_dir)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no starting kernel can be generated (op aten.logcumsumexp" in err, err
    assert "--seed-kernel FILE" in err and "--model NAME" in err
    assert not run_dir.exists()


def test_a_seedless_task_round_trips_and_needs_a_reason():
    import yaml

    from kernelfoundry import REPO_DIR
    from kernelfoundry.errors import TaskError
    from kernelfoundry.task import load_task, task_from_dict
    data = yaml.safe_load((REPO_DIR / "experiments/tasks/relu.yaml").read_text())
    data["seeds"] = []
    with pytest.raises(TaskError, match="an empty list only with an LLM"):
        task_from_dict(data)
    task = task_from_dict(dict(data, no_seed_reason="none written yet"))
    assert task.seeds == () and task_from_dict(task.to_dict()).no_seed_reason == "none written yet"
    assert "no_seed_reason" not in load_task(REPO_DIR / "experiments/tasks/relu.yaml").to_dict()


def test_a_task_file_with_no_seeds_loads_only_for_drafts(tmp_path):
    import yaml

    from kernelfoundry import REPO_DIR
    from kernelfoundry.errors import TaskError
    from kernelfoundry.task import load_task
    data = yaml.safe_load((REPO_DIR / "experiments/tasks/relu.yaml").read_text())
    path = tmp_path / "relu.yaml"
    path.write_text(yaml.safe_dump(dict(data, seeds=[])))
    with pytest.raises(TaskError, match="'seeds'"):
        load_task(path)
    task = load_task(path, allow_no_seed=True)
    assert task.seeds == () and task.no_seed_reason == "the task file lists no seed kernels"


class InlinePool:
    """The driver's view of a worker pool, run in this process: one worker, each call done at once."""

    def __init__(self, worker):
        self.worker, self.futures, self.done, self.replaced, self.calls = worker, {}, {}, 0, 0

    def idle_workers(self):
        return [] if self.futures else [0]

    def submit(self, worker, stage, flight, *args):
        flight.stage, flight.worker = stage, worker
        self.calls += 1
        self.futures[self.calls] = flight
        self.done[self.calls] = getattr(self.worker, stage)(*args)

    def wait(self, timeout_s):
        out = [(flight, self.done.pop(key), None) for key, flight in self.futures.items()]
        self.futures.clear()
        return out


def test_a_resumed_run_counts_its_stored_drafts_and_goes_on_from_the_first_that_passes(tmp_path):
    import sys

    from kernelfoundry import REPO_DIR
    from kernelfoundry.search.drafts import DraftsFailed
    from kernelfoundry.search.loop import SearchDriver, SearchSettings
    from kernelfoundry.search.progress import ProgressLine
    from kernelfoundry.task import load_task, task_from_dict
    sys.path.insert(0, str(Path(__file__).parent / "search"))
    from fake_worker import FakeWorker

    class DraftingWorker(FakeWorker):
        """Drafts fail (the correctness gate) until two earlier failures are reported to it."""
        jobs = []

        def propose(self, job):
            if job["kind"] != "draft":
                return super().propose(job)
            self.jobs.append(job["draft"])
            fixed = len(job["draft"]["failures"]) >= 2
            return super().propose({"kind": "seed", "source": f"DRAFT {job['draft']['n']}" + ("" if fixed else " FAIL")})

    task = load_task(REPO_DIR / "experiments/tasks/softmax.yaml").to_dict()
    task = task_from_dict(dict(task, seeds=[], no_seed_reason="op aten.x has no template"), check_files=False)
    store = RunStore(tmp_path / "run.sqlite")
    worker = DraftingWorker(task.to_dict(), ["h100"], {}, {})

    def driver(budget):
        return SearchDriver(task=task, settings=SearchSettings(budget=budget, workers=1, seed=1, hardware=["h100"]),
                            store=store, run_dir=tmp_path, pool=InlinePool(worker),
                            progress=ProgressLine(budget, quiet=True))
    try:
        with pytest.raises(DraftsFailed, match="all 2 drafts failed") as exc:
            driver(2).run([])                       # max(3, 2 // 4) capped by the budget: 2 drafts
        assert "gate 'correctness': mismatch at row 3" in str(exc.value)
        assert [(r.kind, r.passed) for r in store.iter_candidates()] == [("draft", False)] * 2
        summary = driver(8).run([])                 # resumed: at most 3 drafts, 2 stored
    finally:
        store.close()
    assert [d["n"] for d in worker.jobs] == [1, 2, 3]
    assert [f["reason"] for f in worker.jobs[2]["failures"]] == ["mismatch at row 3"] * 2
    assert worker.jobs[2]["previous"] == {"n": 2, "id": 1, "source": "DRAFT 2 FAIL"}
    assert summary["n_candidates"] == 8 and summary["drafts"]["count"] == 3
    assert summary["drafts"]["passed_candidate"] == 2 and summary["finished"]


def test_without_the_project_tasks_the_draft_example_is_the_shipped_one(monkeypatch, tmp_path):
    """An installed package has no experiments/ folder: the example comes from the package data."""
    from kernelfoundry import data_dir
    from kernelfoundry.search import drafts
    from kernelfoundry.task import load_task
    task = load_task(REPO_DIR / "experiments" / "tasks" / "softmax.yaml")
    monkeypatch.setattr(drafts, "PROJECT_TASKS", tmp_path / "no-such-folder")
    example = drafts.project_example(task, ["h100"])
    assert example["name"] == "draft_example.py" and "installed package" in example["why"]
    assert example["source"].strip() == (data_dir("prompts") / "draft_example.py").read_text().strip()
    assert "PARAMS" in example["source"] and "def launch" in example["source"]
