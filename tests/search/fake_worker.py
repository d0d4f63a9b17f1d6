"""A stand-in worker for driver tests: synthetic proposals and verdicts, no kernels run."""

from __future__ import annotations

import hashlib
import os
import time


class FakeWorker:
    """Proposes `parent + '# edit N'`; verdicts derive from the source text deterministically.

    Sources containing 'FAIL' fail the correctness gate; 'DIE' kills the worker process;
    'NOSRC' makes the mutation fail; a parent containing 'STUCK' has only one possible edit.
    """

    def __init__(self, task, hardware, mutator, verify_options, worker_index=0, sleep_s=0.0, trace_cache=None,
                 side_by_side=True):
        self.hardware = hardware
        self.sleep_s = sleep_s
        self.index = worker_index

    def ping(self):
        return f"fake{self.index}"

    def propose(self, job):
        time.sleep(self.sleep_s)
        if job["kind"] == "seed":
            src = job["source"]
        else:
            parent = job["parent"]["source"]
            src = parent + f"\n# edit {job['seed'] % 997}"
            if "STUCK" in parent:
                src = parent.split("\n")[0] + "\n# the only edit"
            elif job["seed"] % 11 == 0:
                src += " FAIL"
            if job["seed"] % 13 == 0 and "STUCK" not in parent:
                return {"source": None, "mutator": "fake:none", "error": "no operator applied",
                        "parent_ids": [job["parent"]["id"]], "hash": None, "usage": {}, "llm_log": []}
        h = hashlib.sha256(src.encode()).hexdigest()[:32]
        return {"source": src, "mutator": "seed" if job["kind"] == "seed" else "fake:edit", "description": "",
                "parent_ids": [] if job["kind"] == "seed" else [job["parent"]["id"]], "prompt_id": None,
                "error": None, "hash": h, "usage": {"calls": 0}, "llm_log": [], "worker": self.ping()}

    def verify(self, source):
        if "DIE" in source:
            os._exit(1)
        if "FAIL" in source:
            return {"passed": False, "gate": "correctness", "reason": "mismatch at row 3",
                    "gates": [{"name": "correctness", "passed": False, "reason": "mismatch"}],
                    "hardware": {}, "seconds": 0.01}
        h = int(hashlib.sha256(source.encode()).hexdigest(), 16)
        tiling = (h % 1200) / 50.0
        pattern = (h // 1200) % 6 + 0.5
        objective = 0.5 + (h % 1000) / 400.0 + source.count("# edit") * 0.05
        return {"passed": True, "gate": None, "reason": "", "gates": [],
                "descriptors": {"tiling": tiling, "memory_pattern": pattern}, "objective": objective,
                "hardware": {hw: {"latency_s": 1e-3 / objective, "sol_fraction": 0.5, "baseline_s": 1e-3,
                                  "best_params": {"BLOCK": 64}} for hw in self.hardware},
                "param_space": {"BLOCK": [64]}, "seconds": 0.01}
