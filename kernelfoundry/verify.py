"""``python -m kernelfoundry.verify TASK.yaml KERNEL.py``: run every verifier gate on one kernel file.

Prints each gate's verdict, the archive descriptors, the objective and, per
hardware, the predicted latency, fraction of speed-of-light and best template
parameters.  ``--json`` prints one JSON object instead.  Exit status: 0 when
every gate passes, 1 when a gate fails, 2 on bad usage (missing file, bad
task, unknown hardware), 3 on an internal error.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import traceback
from pathlib import Path
from typing import Any

from .errors import UserError
from .records import VerifyResult

EPILOG = """\
gates, in order (the first failure stops the run):
  hack         static checks of the source (imports, reflection, torch math in launch, caches, ...)
  load         the module imports in the sandbox; PARAMS and launch match the task
  correctness  the default config at every check shape x value profile, the other configs at the
               smallest; fresh NaN-poisoned outputs; bounds; determinism
  trace        sampled programs at the target shapes in the instrumented interpreter
  model        the performance model scores each hardware and picks the best parameters
  compile      the best configs compiled for each GPU of the run (Triton's compiler, ahead of time, on
               the CPU): registers, spills, shared memory; what does not compile is excluded
  confirm      the configs the model picked, at the check shapes they have not run at and at shapes
               near the targets' (rows spanning several blocks, many programs, long rows)
  sandbox      the sandboxed process was killed or crashed at an unknown stage, or returned a malformed report

examples:
  python -m kernelfoundry.verify experiments/tasks/softmax.yaml experiments/tasks/kernels/softmax_naive.py
  python -m kernelfoundry.verify experiments/tasks/matmul.yaml my_matmul.py --hardware h100 --json
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m kernelfoundry.verify", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Verify one Triton kernel file against a task: static hack checks, then load, "
                    "correctness and trace in a sandboxed subprocess, then the performance model. "
                    "The kernel format is described in docs/candidate_format.md.")
    p.add_argument("task", metavar="TASK.yaml", help="task file (see docs/tasks.md), or a KernelBench problem "
                                                    "file PROBLEM.py (docs/kernelbench.md)")
    p.add_argument("kernel", metavar="KERNEL.py", help="candidate kernel module (PARAMS, @triton.jit kernels, launch)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--hardware", metavar="NAMES",
                   help="comma-separated hardware names, e.g. h100,ascend910b2 (default: the task's list); "
                        "your own spec files: $KERNELFOUNDRY_HARDWARE_DIR (docs/packaging.md)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed for inputs and config sampling (default: derived from the source, as in "
                        "evolve runs, so a run's kernel gets the objective the run reported)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="CPU seconds each sandboxed job may use (default 120); a job that waits instead of "
                        "computing is stopped at 3x that in wall-clock time")
    p.add_argument("--max-kernel-configs", type=int, default=8, metavar="N",
                   help="kernel configs (non-hint PARAMS combinations) checked and traced (default 8)")
    p.add_argument("--traces", action="store_true", help="with --json, include the raw traces")
    p.add_argument("--no-compile", action="store_true",
                   help="skip the compile gate (the model keeps its register/shared-memory estimates)")
    p.add_argument("--asm", metavar="DIR",
                   help="write the PTX and SASS (NVIDIA) or AMDGCN (AMD) of each GPU's best config into DIR/<hardware>/")
    from .evolve import add_device_options
    add_device_options(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p


def format_latency(seconds: float | None) -> str:
    """``0.123 ms`` / ``45.6 us``; ``-`` for none or infinite (no valid config)."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    return f"{seconds * 1e3:.4g} ms" if seconds >= 1e-4 else f"{seconds * 1e6:.4g} us"


def error_notes(task, hardware: list[str]) -> dict[str, str]:
    """Per hardware, how far the predictions can be trusted (the model's measured error band)."""
    try:
        from .fidelity import band_note
    except ImportError:
        return {}
    return {name: band_note(task, name) for name in hardware}


def format_text(result: VerifyResult, *, task_name: str, kernel: str, notes: dict[str, str] | None = None) -> str:
    """The human-readable report."""
    lines = [f"kernel {kernel} on task {task_name}"]
    for gate in result.gates:
        verdict = "pass" if gate.passed else "FAIL"
        lines.append(f"  {gate.name:<12} {verdict}  {gate.seconds:6.2f} s")
        if gate.reason:                 # a passed gate may note something (the model: its feedback per hardware)
            lines += [f"      {line}" for line in gate.reason.splitlines()]
    if result.descriptors:
        from .evaluate import BIN_LABELS, DESCRIPTOR_BINS, DESCRIPTOR_NAMES, DESCRIPTOR_RANGES
        parts = []
        for name, bins, (lo, hi) in zip(DESCRIPTOR_NAMES, DESCRIPTOR_BINS, DESCRIPTOR_RANGES):
            value = result.descriptors.get(name)
            if value is None:
                continue
            index = min(bins - 1, max(0, int((value - lo) / (hi - lo) * bins)))
            parts.append(f"{name} = {value:.3g} ({BIN_LABELS[name][index]})")
        lines.append("descriptors: " + "; ".join(parts))
    if result.objective is not None:
        lines.append(f"objective: {result.objective:.4g} (predicted speedup over the eager PyTorch estimate)")
    for name, score in result.hardware.items():
        if score.latency_s is None or not math.isfinite(score.latency_s):
            lines.append(f"  {name:<14} no valid config: the model found none that fits this hardware (see the "
                         "model gate above)")
            continue
        params = ", ".join(f"{k}={v}" for k, v in score.best_params.items())
        lines.append(f"  {name:<14} latency {format_latency(score.latency_s):>10}   speed-of-light "
                     f"{100 * score.sol_fraction:5.1f}%   best {params}")
        if notes and notes.get(name):
            lines.append(f"  {'':<14} {notes[name]}")
    status = "PASSED" if result.passed else \
        (f"INCONCLUSIVE at gate '{result.gate}' (the verifier's own limit)" if result.inconclusive
         else f"FAILED at gate '{result.gate}'")
    lines.append(f"{status} in {result.seconds:.2f} s")
    return "\n".join(lines)


def to_json(result: VerifyResult, *, task_name: str, kernel: str, with_traces: bool,
            notes: dict[str, str] | None = None) -> dict[str, Any]:
    out = result.to_dict(with_traces=with_traces)
    out["inconclusive"] = result.inconclusive
    out["task"], out["kernel"] = task_name, kernel
    for name, note in (notes or {}).items():
        if name in out["hardware"]:
            out["hardware"][name]["model_error"] = note
    return out


def read_kernel(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"kernel file {p} does not exist (or is not a file); give the path of a .py candidate.")
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"kernel file {p} cannot be read as UTF-8 text: {exc}.") from None


def write_asm_files(result: VerifyResult, directory: str) -> None:
    """``--asm DIR``: the best configs' assembly, or a note on stderr when nothing compiled."""
    from .evaluate import write_best_asm
    gate = next((g for g in result.gates if g.name == "compile"), None)
    if gate is None or not gate.passed:
        print(f"note: no assembly written to {directory}: the kernel did not reach or pass the compile gate.",
              file=sys.stderr)
        return
    try:
        files = write_best_asm(gate.details, directory)
    except OSError as exc:
        raise UserError(f"cannot write assembly into {directory}: {exc}.") from None
    print(f"assembly: {len(files)} file(s) in {directory}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from .evaluate import Verifier, VerifyOptions
    from .kernelbench import load_task_or_problem
    if not args.timeout > 0:
        raise UserError(f"--timeout must be a positive number of seconds; got {args.timeout}.")
    if args.max_kernel_configs < 1:
        raise UserError(f"--max-kernel-configs must be at least 1; got {args.max_kernel_configs}.")
    task = load_task_or_problem(args.task, check_files=False)          # verify does not use the task's seed kernels
    source = read_kernel(args.kernel)
    hardware = None
    if args.hardware is not None:
        hardware = [h.strip() for h in args.hardware.split(",") if h.strip()]
        if not hardware:
            raise UserError("--hardware is empty; give names such as h100,ascend910b2.")
    if args.asm and args.no_compile:
        raise UserError("--asm needs the compile gate; drop --no-compile.")
    from .measure import MeasureStep, resolve_device
    device = resolve_device(args.device, top_k=args.device_top_k)     # exit 2 for --device cuda without a GPU
    options = VerifyOptions(max_kernel_configs=args.max_kernel_configs, compile=not args.no_compile,
                            timeout_s=args.timeout)
    verifier = Verifier(task, hardware, options)
    if device is not None:
        from .measure import DeviceMeasurer
        verifier.device = MeasureStep(DeviceMeasurer(device), task, verifier.hardware[0])
    result, verdict = verifier.verify(source, seed=args.seed)
    if args.asm:
        write_asm_files(result, args.asm)
    notes = error_notes(task, list(result.hardware)) if result.hardware else {}
    record = verdict.get("measured")
    if args.json:
        out = to_json(result, task_name=task.name, kernel=args.kernel, with_traces=args.traces, notes=notes)
        if record is not None:
            from .measure import merge_verdict
            out = merge_verdict(out, record)
        print(json.dumps(out))
    else:
        print(format_text(result, task_name=task.name, kernel=args.kernel, notes=notes))
        if record is not None:
            from .measure import format_measured
            print("\n".join(format_measured(record)))
    return 0 if result.passed and (record is None or record.get("passed")) else 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if args.debug:
            traceback.print_exc()
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug in the verifier, not the user's fault
        print(f"internal error: {type(exc).__name__}: {exc}" +
              ("" if args.debug else " (run with --debug for the traceback)"), file=sys.stderr)
        if args.debug:
            traceback.print_exc()
        return 3


if __name__ == "__main__":
    sys.exit(main())
