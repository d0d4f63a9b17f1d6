"""KernelBench's contract on CPU: ``python -m kernelfoundry.kernelbench.contract SOLUTION.py PROBLEM.py``.

Builds ``Model(*get_init_inputs())`` from the problem (``torch.manual_seed(seed)``) and
``ModelNew(*get_init_inputs())`` from the solution, loads the Model's ``state_dict`` into
ModelNew, calls both on ``get_inputs()`` and compares them with KernelBench's tolerance.
Runs at the imported task's check shapes: the problem's module-level size variables are set
to the check sizes first (so nothing multi-GB is allocated), in a child process with Triton's
interpreter on (``TRITON_INTERPRET=1``).  Both files are run as code: trust them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TOLERANCE = 1e-2


def check_contract(solution: Path, problem: Path, *, env_index: int = 0, seed: int = 0,
                   timeout_s: float = 600.0) -> dict[str, Any]:
    """Run the contract in a child process; ``{"ok": bool, "reason": str, "max_abs_err": float, ...}``."""
    from .task_loader import load_task_or_problem
    task = load_task_or_problem(problem, check_files=False)
    sizes = {str(task.target_shapes[0][s]): task.check_shapes[min(env_index, len(task.check_shapes) - 1)][s]
             for s in task.target_shapes[0]}
    from .. import REPO_DIR
    environ = dict(os.environ, TRITON_INTERPRET="1",
                   PYTHONPATH=os.pathsep.join([str(REPO_DIR), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "kernelfoundry.kernelbench.contract", "--child", str(solution),
                           str(problem), json.dumps(sizes), str(seed)], capture_output=True, text=True,
                          env=environ, timeout=timeout_s)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"ok": False, "reason": f"the contract run failed: {proc.stderr.strip()[-800:]}"}
    return json.loads(lines[-1])


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _child(solution: Path, problem: Path, sizes: dict[str, int], seed: int) -> dict[str, Any]:
    import torch
    prob = _module(problem, "kernelbench_problem_under_test")
    for key, value in list(vars(prob).items()):         # module-level size variables -> check sizes
        if type(value) is int and str(value) in sizes and not key.startswith("__"):
            setattr(prob, key, sizes[str(value)])
    sol = _module(solution, "kernelbench_solution_under_test")
    init = prob.get_init_inputs()
    torch.manual_seed(seed)
    model = prob.Model(*init)
    new = sol.ModelNew(*init)
    new.load_state_dict(model.state_dict())
    torch.manual_seed(seed)
    inputs = prob.get_inputs()
    with torch.no_grad():
        want = model(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
        got = new(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    shapes = [list(t.shape) for t in inputs if isinstance(t, torch.Tensor)]
    if len(want) != len(got):
        return {"ok": False, "reason": f"ModelNew returns {len(got)} outputs, Model {len(want)}", "shapes": shapes}
    err = 0.0
    for a, b in zip(want, got):
        if a.shape != b.shape or a.dtype != b.dtype:
            return {"ok": False, "reason": f"output {tuple(b.shape)} {b.dtype}, Model's {tuple(a.shape)} {a.dtype}",
                    "shapes": shapes}
        err = max(err, float((a.double() - b.double()).abs().max()) if a.numel() else 0.0)
        if not torch.allclose(a, b, atol=TOLERANCE, rtol=TOLERANCE):
            return {"ok": False, "reason": f"outputs differ (max abs err {err:.3g})", "max_abs_err": err,
                    "shapes": shapes}
    return {"ok": True, "reason": "", "max_abs_err": err, "shapes": shapes}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        solution, problem, sizes, seed = argv[1:5]
        print(json.dumps(_child(Path(solution), Path(problem), json.loads(sizes), int(seed))))
        return 0
    p = argparse.ArgumentParser(prog="python -m kernelfoundry.kernelbench.contract", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("solution", type=Path, help="a ModelNew module (export --format kernelbench)")
    p.add_argument("problem", type=Path, help="the problem file it answers")
    p.add_argument("--shape", type=int, default=0, help="which check shape of the imported task (default 0)")
    args = p.parse_args(argv)
    for path in (args.solution, args.problem):
        if not path.is_file():
            print(f"error: {path} does not exist (or is not a file).", file=sys.stderr)
            return 2
    result = check_contract(args.solution, args.problem, env_index=args.shape)
    print(("PASSED" if result["ok"] else "FAILED") + f": {args.solution} vs {args.problem} at input shapes "
          f"{result.get('shapes')}" + (f", max abs err {result['max_abs_err']:.3g}" if "max_abs_err" in result else "")
          + (f": {result['reason']}" if result["reason"] else ""))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
