"""A driver process for the multi-node tests: an evolve run against ``--ray-address`` with fake workers.

    python cluster_driver.py ADDRESS RUN_DIR --workers K --budget N --sleep S [--resume]

The fake workers (``fake_worker.FakeWorker``, proposals sleeping S seconds) are pickled by
value, so the nodes need nothing from tests/; the project itself reaches them the way a real
run ships it (``search/cluster.py``).
"""

import argparse
import json
import sys
import time
from pathlib import Path

from ray import cloudpickle  # Ray pickles actor classes with its own copy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fake_worker  # noqa: E402

cloudpickle.register_pickle_by_value(fake_worker)

from kernelfoundry.errors import UserError  # noqa: E402
from kernelfoundry.evolve import EvolveConfig  # noqa: E402
from kernelfoundry.search.session import run_evolution  # noqa: E402

TASK = HERE.parents[1] / "experiments" / "tasks" / "relu.yaml"
SLEEP_S = 0.0
NEEDS = ""


class SleepyWorker(fake_worker.FakeWorker):
    """A FakeWorker whose proposals take SLEEP_S seconds and whose results name its node."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sleep_s = SLEEP_S
        if NEEDS:                            # a dependency the nodes do not have
            __import__(NEEDS)

    def ping(self):
        import ray
        return f"fake{self.index}@{ray.get_runtime_context().get_node_id()[:8]}"


def main() -> int:
    global SLEEP_S, NEEDS
    p = argparse.ArgumentParser()
    p.add_argument("address", help="the cluster's address, or 'local' for a local Ray")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--budget", type=int, required=True)
    p.add_argument("--sleep", type=float, default=0.2)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--needs", default="", help="a module every worker imports when it starts")
    args = p.parse_args()
    SLEEP_S, NEEDS = args.sleep, args.needs
    cfg = EvolveConfig(task=TASK, budget=args.budget, workers=args.workers, ray_address=None if args.address == "local" else args.address,
                       out=None if args.resume else args.run_dir, resume=args.run_dir if args.resume else None,
                       memory_mode="off")
    t0 = time.time()
    try:
        summary, _ = run_evolution(cfg, worker_cls=SleepyWorker)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    print("SUMMARY " + json.dumps({"n_candidates": summary["n_candidates"], "finished": summary["finished"],
                                   "workers_per_node": summary["workers_per_node"],
                                   "workers_replaced": summary["workers_replaced"],
                                   "seconds": time.time() - t0}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
