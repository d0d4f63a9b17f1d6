"""Write the non-convolution problems of the fidelity data set as KernelBench-style files, import
each one, and run ``verify`` on its generated starting kernel.

    python experiments/kernelbench_from_fidelity.py --out /tmp/kb [--smoke] [--no-verify] [--json F]

``/work/shared/fidelity/kernelbench_h100.yaml`` (``--data``) describes 137 KernelBench
problems with our own functional references and their inputs (forward inputs, then module
parameters and buffers with the attribute each replaces).  Each non-conv entry becomes
``OUT/level<L>/<problem>.py``: a ``Model`` holding the parameters and buffers at their
attribute paths (sizes as constructor arguments, as KernelBench problems do), calling the
reference in ``forward``; ``get_inputs()`` builds the forward inputs from module-level size
variables.  The report counts problems imported, verified and refused, with the reasons
grouped.  ``--smoke`` runs two problems (a test runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DATA = Path("/work/shared/fidelity/kernelbench_h100.yaml")
SMOKE = ("19_ReLU.py", "76_Gemm_Add_ReLU.py")
CONV = ("conv", "conv-transposed", "conv-depthwise")


def _dims(shape: list[int]) -> str:
    return ", ".join(f"N{d}" if d > 1 else str(d) for d in shape)


def _tensor(name: str, spec: dict) -> str:
    """The expression that makes forward input *name* (its described value structure, roughly)."""
    shape, dtype, values = spec["shape"], spec["dtype"], str(spec.get("values") or "")
    dims = "(" + _dims(shape) + ("," if len(shape) == 1 else "") + ")"
    if dtype == "bool":
        return f"torch.randint(0, 2, {dims}).bool()"
    if dtype.startswith("int"):
        m = re.search(r"\[(\d+),\s*(\d+)\)", values)
        high = int(m.group(2)) if m else 2
        return f"torch.randint(0, {f'N{high}' if high > 1 else high}, {dims}, dtype=torch.{dtype})"
    if "-1 or +1" in values:
        return f"torch.randint(0, 2, {dims}).float() * 2 - 1"
    if "softmax" in values:
        return f"torch.rand({dims}).softmax(dim=-1)"
    return f"torch.rand({dims}, dtype=torch.{dtype})"


def problem_source(entry: dict) -> str:
    """A KernelBench-style problem file for one fidelity entry."""
    inputs = entry["inputs"]
    forward = [n for n, s in inputs.items() if s["role"] == "input"]
    state = [(n, s) for n, s in inputs.items() if s["role"] != "input"]
    sizes = sorted({d for s in inputs.values() for d in s["shape"] if d > 1})
    init_sizes = sorted({d for _, s in state for d in s["shape"] if d > 1})
    ints = [int(m.group(2)) for s in inputs.values()
            for m in [re.search(r"\[(\d+),\s*(\d+)\)", str(s.get("values") or ""))] if m]
    sizes = sorted(set(sizes) | {i for i in ints if i > 1})
    lines = [f'"""{entry["description"].strip()}"""', "import math", "", "import torch", "import torch.nn as nn",
             "import torch.nn.functional as F", "", "", entry["reference"].rstrip(), "", "",
             "class Model(nn.Module):", f'    """Holds the parameters and buffers of {entry["problem"]}; forward is '
             'the reference."""', "",
             f"    def __init__(self{''.join(f', N{d}' for d in init_sizes)}):", "        super().__init__()"]
    made = set()
    for name, spec in state:
        path = spec["module_attr"].split(".")
        for k in range(1, len(path)):
            holder = ".".join(path[:k])
            if holder not in made:
                lines.append(f"        self.{holder} = nn.Module()")
                made.add(holder)
        dims = "(" + _dims(spec["shape"]) + ("," if len(spec["shape"]) == 1 else "") + ")"
        dtype = spec["dtype"]
        if spec["role"] == "parameter":
            lines.append(f"        self.{spec['module_attr']} = nn.Parameter(torch.randn({dims}, dtype=torch.{dtype}))")
        else:
            owner = ".".join(["self"] + path[:-1])
            value = f"torch.zeros({dims}, dtype=torch.{dtype})" if not spec["shape"] or dtype.startswith("int") \
                else f"torch.rand({dims}, dtype=torch.{dtype})"
            lines.append(f"        {owner}.register_buffer({path[-1]!r}, {value})")
    args = ", ".join(forward + [f"self.{s['module_attr']}" for _, s in state])
    lines += ["", f"    def forward(self, {', '.join(forward)}):", f"        return reference({args})", "", ""]
    lines += [f"N{d} = {d}" for d in sizes] + ["", "",
              "def get_inputs():", f"    return [{', '.join(_tensor(n, inputs[n]) for n in forward)}]", "", "",
              "def get_init_inputs():", f"    return [{', '.join(f'N{d}' for d in init_sizes)}]", ""]
    return "\n".join(lines)


def write_problems(data: Path, out: Path, names: tuple[str, ...] | None = None) -> list[Path]:
    entries = yaml.safe_load(data.read_text())["problems"]
    paths = []
    for entry in entries:
        if entry["kind"] in CONV or (names and entry["problem"] not in names):
            continue
        path = out / f"level{entry['level']}" / entry["problem"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(problem_source(entry))
        paths.append(path)
    return paths


def _reason(text: str) -> str:
    """A short group name for a refusal or failure reason."""
    text = re.sub(r"problem file \S+ ", "", text)
    m = re.search(r"op (\S+) has no template", text)
    if m:
        return f"no seed template for {m.group(1)}"
    return re.sub(r"\{[^}]*\}|\[[^\]]*\]|\d+(\.\d+)?", "#", text)[:140]


def run(paths: list[Path], *, verify: bool, max_kernel_configs: int = 2) -> dict:
    from kernelfoundry.errors import TaskError
    from kernelfoundry.kernelbench import materialize
    from kernelfoundry.task import load_task
    rows = []
    for path in paths:
        row = {"problem": f"{path.parent.name}/{path.name}"}
        start = time.time()
        try:
            task_file = materialize(path, check_files=False)
            meta = json.loads((task_file.parent / "import.json").read_text())
            row["imported"] = True
            row["no_seed"] = meta.get("no_seed_reason")
        except TaskError as exc:
            row.update(imported=False, reason=str(exc))
            rows.append(row)
            print(f"{row['problem']:<70} REFUSED  {exc}", flush=True)
            continue
        if verify and not row["no_seed"]:
            from kernelfoundry.evaluate import default_limits, verify as run_verify
            task = load_task(task_file, check_files=False)
            source = (task_file.parent / "task_seed.py").read_text()
            result = run_verify(task, source, ["h100"], seed=0, limits=default_limits(task, 300.0),
                                max_kernel_configs=max_kernel_configs, compile=False)
            row["verified"] = bool(result.passed)
            row["objective"] = result.objective
            if not result.passed:
                gate = next((g for g in result.gates if not g.passed), None)
                row["reason"] = f"gate {result.gate}: {(gate.reason if gate else '')[:300]}"
        row["seconds"] = round(time.time() - start, 1)
        status = ("verified" if row.get("verified") else "VERIFY FAILED" if verify and not row["no_seed"]
                  else "imported" if not row["no_seed"] else "NO SEED")
        print(f"{row['problem']:<70} {status:<14} {row['seconds']:6.1f} s  "
              f"{row.get('reason') or row.get('no_seed') or ''}"[:400], flush=True)
        rows.append(row)
    return summarize(rows, verify)


def summarize(rows: list[dict], verify: bool) -> dict:
    refused = Counter(_reason(r["reason"]) for r in rows if not r["imported"])
    no_seed = Counter(_reason(r["no_seed"]) for r in rows if r["imported"] and r.get("no_seed"))
    failed = Counter(_reason(r["reason"]) for r in rows if r.get("verified") is False)
    return {"problems": len(rows), "imported": sum(r["imported"] for r in rows),
            "seeded": sum(1 for r in rows if r["imported"] and not r.get("no_seed")),
            "verified": sum(1 for r in rows if r.get("verified")) if verify else None,
            "refused": dict(refused.most_common()), "no_seed": dict(no_seed.most_common()),
            "verify_failed": dict(failed.most_common()), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DATA, help="the fidelity YAML")
    p.add_argument("--out", type=Path, required=True, help="directory for the generated problem files")
    p.add_argument("--smoke", action="store_true", help=f"only {', '.join(SMOKE)}")
    p.add_argument("--only", help="comma-separated problem file names")
    p.add_argument("--no-verify", dest="verify", action="store_false", help="import only")
    p.add_argument("--json", type=Path, help="write the report as JSON")
    args = p.parse_args(argv)
    if not args.data.is_file():
        print(f"error: the data file {args.data} does not exist (--data).", file=sys.stderr)
        return 2
    names = SMOKE if args.smoke else tuple(args.only.split(",")) if args.only else None
    paths = write_problems(args.data, args.out, names)
    report = run(paths, verify=args.verify, max_kernel_configs=1 if args.smoke else 2)
    print(f"\n{report['problems']} problems: {report['imported']} imported, {report['seeded']} with a generated "
          f"seed, {report['verified'] if args.verify else '-'} verified")
    for key in ("refused", "no_seed", "verify_failed"):
        for reason, n in report[key].items():
            print(f"  {key:<14} {n:3d}  {reason}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TRITON_INTERPRET", "1")
    sys.exit(main())
