"""``python -m kernelfoundry.evolve TASK.yaml``: run a kernel search into a run directory.

Thin command layer: parse options, validate the task and hardware, start Ray,
hand over to :class:`kernelfoundry.search.loop.SearchDriver`, print a summary.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from . import DEFAULT_ARCHIVES  # noqa: F401  (kept importable from here)
from .errors import UserError
from .search import DEFAULT_BUDGET, EvolveConfig, config_to_meta  # noqa: F401  (kept importable from here)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m kernelfoundry.evolve",
        description="Search for fast Triton kernels for TASK: mutate kernels (LLM or the built-in offline "
                    "mutator), verify them in a sandbox, score them on the performance model of each target "
                    "hardware, and keep the best kernel per behaviour cell in a MAP-Elites archive. "
                    "Results land in archives/<task>/<UTC time>/ (run.sqlite, summary.json); then use "
                    "`python -m kernelfoundry.plot RUN_DIR` and `python -m kernelfoundry.export RUN_DIR`.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("task", nargs="?", type=Path,
                   help="task file (YAML) or KernelBench problem file (PROBLEM.py, see docs/kernelbench.md); "
                        "optional with --resume")
    p.add_argument("--seed-kernel", type=Path, metavar="FILE",
                   help="with a KernelBench PROBLEM.py: start from this kernel instead of the generated one")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                   help="total candidates to evaluate, seeds included (with --resume: the new total)")
    p.add_argument("--workers", type=int, default=0,
                   help="Ray workers (jobs in flight); 0 = one per CPU of this machine, or of the cluster")
    p.add_argument("--seed", type=int, default=0, help="random seed of selection and mutation")
    p.add_argument("--out", type=Path, help="run directory to create (default: archives/<task>/<UTC time>)")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR",
                   help="continue a run to --budget without re-evaluating stored candidates; the run keeps "
                        "its seed, hardware, models, strategy, prompt and tuning settings (giving other values "
                        "is an error)")
    p.add_argument("--hardware", help="comma-separated hardware names (default: the task's list); "
                                      "see `python -m kernelfoundry.hardware`; your own spec files: $KERNELFOUNDRY_HARDWARE_DIR "
                                      "(docs/packaging.md)")
    p.add_argument("--model", action="append", default=[], dest="models", metavar="NAME",
                   help="litellm model for LLM mutation (repeatable: an ensemble); replay/PATH replays a JSONL; "
                        "default: the task's models, else the built-in offline mutator")
    p.add_argument("--prompts", type=Path, dest="prompt_dir", metavar="DIR",
                   help="your own prompt templates (*.j2) and/or variants.yaml; the rest come from prompts/")
    p.add_argument("--ray-address", help="address of a running Ray cluster, HOST:PORT (default: $RAY_ADDRESS, "
                                         "else a private local Ray); see docs/cluster.md")
    p.add_argument("--strategy", choices=("map-elites", "greedy", "random"), default="map-elites",
                   help="parent selection: MAP-Elites, greedy refinement of the best, or mutations of the seeds")
    p.add_argument("--no-prompt-evolution", dest="prompt_evolution", action="store_false",
                   help="keep the prompts fixed (LLM runs only)")
    p.add_argument("--no-tuning", dest="tuning", action="store_false",
                   help="score only each kernel's default template config (ablation)")
    p.add_argument("--max-cost", type=float, metavar="USD", help="stop proposing once LLM spend reaches USD")
    p.add_argument("--max-llm-seconds", type=float, metavar="S",
                   help="stop proposing once the LLM calls' summed latency reaches S (sim models: virtual)")
    p.add_argument("--routing", metavar="fixed|adaptive",
                   help="how an ensemble picks the model per request: fixed weights, or the adaptive router "
                        "(expected gain per cost and time; default when more than one model); docs/llm.md")
    p.add_argument("--max-kernel-configs", type=int, default=8,
                   help="kernel configs traced per candidate (block sizes etc.; hints are swept by the model)")
    p.add_argument("--memory", type=Path, metavar="PATH",
                   help="experience memory shared by runs (SQLite; default $KERNELFOUNDRY_MEMORY, else "
                        "archives/memory.sqlite): operator priors, prompt credit, cold-start seeds from similar "
                        "tasks; see docs/memory.md and `python -m kernelfoundry.memory stats`")
    p.add_argument("--no-memory", dest="memory_mode", action="store_const", const="off", default="on",
                   help="neither read nor write the experience memory (a cold, reproducible run)")
    add_device_options(p)
    p.add_argument("--no-trace-cache", dest="trace_cache", action="store_false",
                   help="trace every config of every candidate, even those a kernel differing only in PARAMS "
                        "had traced (the cache never changes a verdict; this is for timing comparisons; "
                        "trace cache on: %(default)s)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    return p


def add_device_options(p: argparse.ArgumentParser) -> None:
    """``--device`` and ``--device-top-k`` (evolve, verify and bench; docs/device.md)."""
    p.add_argument("--device", choices=("auto", "cuda", "model"), default="auto",
                   help="auto (default): measure on the GPU when torch sees one, else the model alone; cuda: "
                        "require a GPU; model: never measure")
    p.add_argument("--device-top-k", type=int, default=8, metavar="K",
                   help="configs per target shape the device times: the model's K fastest (default 8)")


def config_from_args(args: argparse.Namespace) -> EvolveConfig:
    if args.task is None and args.resume is None:
        raise UserError("give a task file (e.g. experiments/tasks/softmax.yaml) or --resume RUN_DIR.")
    task = args.task
    if getattr(args, "seed_kernel", None) is not None:
        if task is None or task.suffix != ".py":
            raise UserError("--seed-kernel goes with a KernelBench problem file (PROBLEM.py); a task file names "
                            "its seeds in its 'seeds' field.")
        from .kernelbench import materialize
        task = materialize(task, seed_kernel=args.seed_kernel)
    if args.budget < 1:
        raise UserError(f"--budget must be at least 1; got {args.budget}.")
    if args.workers < 0:
        raise UserError(f"--workers must be 0 (auto) or positive; got {args.workers}.")
    if args.max_kernel_configs < 1:
        raise UserError(f"--max-kernel-configs must be at least 1; got {args.max_kernel_configs}.")
    if args.device_top_k < 1:
        raise UserError(f"--device-top-k must be at least 1; got {args.device_top_k}.")
    if args.max_cost is not None and args.max_cost < 0:
        raise UserError(f"--max-cost must be non-negative; got {args.max_cost}.")
    if args.max_llm_seconds is not None and not args.max_llm_seconds > 0:
        raise UserError(f"--max-llm-seconds must be a positive number of seconds; got {args.max_llm_seconds}.")
    if args.routing is not None and args.routing not in ("fixed", "adaptive"):
        raise UserError(f"--routing must be fixed or adaptive; got {args.routing!r}.")
    hardware = [h.strip() for h in args.hardware.split(",") if h.strip()] if args.hardware else None
    if args.memory is not None and args.memory_mode == "off":
        raise UserError(f"--memory {args.memory} and --no-memory contradict each other; give one.")
    if args.resume is not None and args.out is not None and Path(args.out).resolve() != Path(args.resume).resolve():
        raise UserError(f"--out {args.out} with --resume {args.resume}: a resumed run stays in its own "
                        "directory; drop --out.")
    return EvolveConfig(explicit=frozenset(getattr(args, "explicit", ())), task=task, budget=args.budget, workers=args.workers, seed=args.seed, out=args.out,
                        resume=args.resume, hardware=hardware, models=list(args.models),
                        ray_address=args.ray_address, strategy=args.strategy,
                        prompt_evolution=args.prompt_evolution, tuning=args.tuning, max_cost=args.max_cost,
                        max_llm_seconds=args.max_llm_seconds, routing=args.routing,
                        max_kernel_configs=args.max_kernel_configs, prompt_dir=args.prompt_dir, quiet=args.quiet,
                        memory=args.memory, memory_mode=args.memory_mode, device=args.device,
                        device_top_k=args.device_top_k, trace_cache=args.trace_cache)


def explicit_options(argv: list[str] | None) -> set[str]:
    """The destinations of the options given in *argv* (not left at their defaults)."""
    parser = build_parser()
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    return set(vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.explicit = explicit_options(argv)
    try:
        from .search import run_evolution, sticky_interrupt
        cfg = config_from_args(args)
        with sticky_interrupt() as stop:
            summary, run_dir = run_evolution(cfg, stop=stop)
    except UserError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        print(f"\ninterrupted: every finished candidate is stored; continue with --resume "
              f"{getattr(exc, 'run_dir', None) or 'RUN_DIR'}.", file=sys.stderr)
        return 130
    print_summary(summary, run_dir)
    return 0


def print_summary(summary: dict[str, Any], run_dir: Path) -> None:
    best = summary.get("best_objective")
    rows = [
        ("task", summary["task"]),
        ("candidates", f"{summary['n_candidates']} ({summary['n_correct']} correct)"),
        ("best objective", "-" if best is None else f"{best:.3f}x over eager PyTorch, predicted (candidate "
                                                     f"{summary['best_candidate_id']})"),
        ("elites / coverage", f"{summary['num_elites']} / {summary['coverage']:.1%}"),
        ("QD-score", f"{summary['qd_score']:.3f}"),
        ("gate failures", (", ".join(f"{k} {v}" for k, v in summary["gate_failures"].items()) or "none")
         + (f"; {summary['inconclusive']} inconclusive (the verifier's own memory or time limit: not charged "
            "to the kernel or its operator)" if summary.get("inconclusive") else "")),
        ("LLM", f"{summary['llm']['calls']} calls, {summary['llm']['prompt_tokens']}+"
                f"{summary['llm']['completion_tokens']} tokens, ${summary['llm']['cost_usd']:.4f}, "
                f"{summary['llm'].get('seconds', 0.0):.0f} s"),
        ("hardware", ", ".join(summary["hardware"])),
        ("wall time", f"{summary['wall_seconds']:.1f} s"),
    ]
    if summary.get("gate_seconds"):            # where the verifier's time went
        from .search import format_gate_seconds
        rows.append(("verifier s (median/p90)", format_gate_seconds(summary["gate_seconds"])))
    for name, band in ((summary.get("model_error") or {}).get("hardware") or {}).items():
        if band.get("note"):             # every objective is a prediction: say how far it can be trusted
            rows.append((f"model ({name})", band["note"]))
    mem = summary.get("memory")
    if mem and mem.get("path"):
        seeds = mem.get("cold_start_seeds") or []
        rows.append(("memory", f"{mem['path']}: {mem['experiences_written']} experiences written"
                               + (f"; {len(seeds)} seed(s) from similar tasks' elites" if seeds else "")
                               + ("" if mem.get("read") else " (not read)")))
    routing = summary.get("routing")
    if routing and len(routing.get("models", {})) > 1:
        rows.append((f"routing ({routing['policy']})", "; ".join(
            f"{name} {m['calls']} calls, {m['correct']} correct, ${m['cost_usd']:.4f}"
            for name, m in routing["models"].items())))
    drafts = summary.get("drafts")
    if drafts and drafts.get("count"):       # a task without a seed: the LLM drafted its first kernel
        rows.append(("drafts", f"{drafts['count']} (at most {drafts['max']}); " + (
            f"candidate {drafts['passed_candidate']} passed and seeded the search"
            if drafts.get("passed_candidate") is not None else "none passed")))
    if summary.get("stop_reason"):
        rows.append(("stopped early", summary["stop_reason"]))
    if "prompts" in summary:
        p = summary["prompts"]
        rows.append(("prompt variants", f"{p.get('n_variants')} ({p.get('n_evolved')} evolved)"))
    width = max(len(k) for k, _ in rows)
    print()
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    print(f"\nrun directory: {run_dir}")
    print(f"next: python -m kernelfoundry.plot {run_dir}  |  python -m kernelfoundry.export {run_dir}")


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    sys.exit(main())
