"""An automatic red team for the verifier: honest seeds rewritten into cheats, verified, tabulated.

    python experiments/redteam.py [--tasks softmax,matmul] [--variants 40] [--seed 0] [--transforms A,B]
                                  [--max-combo 3] [--hardware h100] [--jobs 1] [--json OUT] [--smoke]

Each task's honest seed kernels (``seeds:`` in experiments/tasks/<task>.yaml) go through a
library of source transformations, each implementing one cheat pattern a hostile candidate
author would try (see :data:`TRANSFORMS`): a dead first load through a shared load site, an idle
loop trip, a for loop turned into a while loop, fp16 casts before tl.dot, precision laundered
through a reduction, a dummy 16x16 dot, dots skipped on all-zero tiles, work skipped when the
loop sampler is detected, work moved into programs the trace rarely samples, a target-shape-only
shortcut, span-shape evasion, tensors passed as constexprs, torch hidden behind a dict key, a
curried lambda or a splat, .contiguous() copies, work hidden in rare heavy loop trips (one trip
in 32 redoes its group's trips), fp32 dot operands laundered to fp16 through scratch buffers, ...
(the library: redteam_transforms.py next to this script).  Variants are the single
transformations that apply to a seed plus random combinations of two or more (``--variants`` in
all per task, ``--seed`` picks the combinations, ``--transforms`` restricts the library).

Every variant is verified with the project's public verifier (``pipeline.verify``, sandboxed),
and so is its honest baseline: the seed itself, or the seed with the same PARAMS change when a
transformation needs one (a dummy dot needs num_stages > 1 to be worth anything; the baseline
gets the same num_stages), or an honest twin with the same memory traffic (fp16 scratch copies
cast back to fp32 before the dot).  The table gives, per variant: the transformations, the verdict
(``passed`` or ``rejected:<gate>``), its objective, the baseline's, their ratio, whether the
span-shape check ran, and a flag:

* ``ESCAPE`` when the variant passes with an objective more than 10% above its baseline, or
  passes at all although one of its transformations makes it wrong somewhere the verifier
  does not look or computes with torch (kind ``wrong``);
* ``known`` when such an escape only involves transformations listed in
  ``redteam_known_escapes.yaml`` next to this script (escapes reported and awaiting a fix).

``--smoke`` is a tiny run (relu, a fixed handful of transformations, one hardware) for the test
suite: a minute or less.  Exit status: 0 when no unknown escape was found, 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kernelfoundry.evaluate import default_limits, verify  # noqa: E402
from kernelfoundry.task import Task, load_task  # noqa: E402
from experiments.redteam_transforms import TRANSFORMS, NotApplicable, Transform  # noqa: E402,F401  (re-exported)

TASKS_DIR = REPO / "experiments" / "tasks"
KNOWN_FILE = Path(__file__).resolve().with_name("redteam_known_escapes.yaml")
MARGIN = 0.10
SMOKE_TASK = "relu"
SMOKE_TRANSFORMS = ("shared_site_dead_load", "separate_dead_load", "target_shape_shortcut", "tensor_constexpr",
                    "host_torch_dict_key", "span_evasion_assert", "sample_dodging")


# ---- variants, verification, the table ----------------------------------------------------------------------

@dataclass
class Variant:
    task: str
    seed_file: str
    transforms: tuple[str, ...]
    source: str
    baseline_source: str

    @property
    def kind(self) -> str:
        return "wrong" if any(TRANSFORMS[t].kind == "wrong" for t in self.transforms) else "inflate"

    @property
    def label(self) -> str:
        return "+".join(self.transforms)


def apply_all(names: tuple[str, ...], source: str, task: Task) -> tuple[str, str]:
    """(variant source, baseline source) after applying *names* in order; raises NotApplicable."""
    baseline = source
    for name in names:
        t = TRANSFORMS[name]
        source = t.apply(source, task)
        baseline = t.baseline(baseline, task)
    ast.parse(source)
    return source, baseline


def make_variants(task: Task, count: int, rng: random.Random, *, max_combo: int = 3,
                  only: tuple[str, ...] | None = None) -> list[Variant]:
    """Every applicable single transformation per seed, then random combinations, *count* in all."""
    out: list[Variant] = []
    seen: set[tuple[str, str]] = set()
    names = list(only or TRANSFORMS)
    for path, seed in task.seed_sources():
        applicable = []
        for name in names:
            try:
                src, base = apply_all((name,), seed, task)
            except (NotApplicable, SyntaxError):
                continue
            applicable.append(name)
            if (str(path), name) not in seen:
                seen.add((str(path), name))
                out.append(Variant(task.name, path.name, (name,), src, base))
        tries = 0
        while len(out) < count and len(applicable) >= 2 and tries < 20 * count and max_combo >= 2:
            tries += 1
            combo = tuple(rng.sample(applicable, rng.randint(2, min(max_combo, len(applicable)))))
            key = (str(path), "+".join(sorted(combo)))
            if key in seen:
                continue
            try:
                src, base = apply_all(combo, seed, task)
            except (NotApplicable, SyntaxError):
                continue
            seen.add(key)
            out.append(Variant(task.name, path.name, combo, src, base))
    return out[:count] if count else out


@dataclass
class Row:
    task: str
    seed_file: str
    variant: str
    kind: str
    verdict: str
    reason: str
    objective: float | None
    baseline: float | None
    ratio: float | None
    span: str
    flag: str
    seconds: float


def span_state(result) -> str:
    for gate in result.gates:
        if gate.name == "correctness" and gate.passed:
            runs = gate.details.get("span_runs", 0)
            skipped = gate.details.get("span_skipped") or []
            if not runs:
                return "none"
            return "skipped" if len(skipped) >= runs else "ran"
    return "-"


def load_known() -> set[str]:
    if not KNOWN_FILE.exists():
        return set()
    data = yaml.safe_load(KNOWN_FILE.read_text()) or {}
    return {str(k) for k in (data.get("escapes") or {})}


class RedTeam:
    """Verifies variants and their baselines (baselines cached by source)."""

    def __init__(self, hardware: list[str] | None, timeout_s: float, seed: int, *, progress: bool = False):
        self.hardware, self.timeout_s, self.seed, self.progress = hardware, timeout_s, seed, progress
        self.baselines: dict[tuple[str, str], object] = {}
        self.tasks: dict[str, Task] = {}

    def verify(self, task: Task, source: str):
        return verify(task, source, self.hardware, seed=self.seed, limits=default_limits(task, self.timeout_s))

    def baseline(self, task: Task, source: str):
        key = (task.name, source)
        if key not in self.baselines:
            self.baselines[key] = self.verify(task, source)
        return self.baselines[key]

    def run(self, variant: Variant, known: set[str]) -> Row:
        task = self.tasks[variant.task]
        start = time.perf_counter()
        result = self.verify(task, variant.source)
        base = self.baseline(task, variant.baseline_source)
        seconds = time.perf_counter() - start
        base_obj = base.objective if base.passed else None
        ratio = (result.objective / base_obj) if result.passed and base_obj else None
        escape = result.passed and (variant.kind == "wrong" or (ratio is not None and ratio > 1 + MARGIN))
        flag = "-"
        if escape:
            flag = "known" if any(t in known for t in variant.transforms) else "ESCAPE"
        verdict = "passed" if result.passed else f"rejected:{result.gate}"
        if self.progress:
            print(f"  {variant.task} {variant.label}: {verdict} {fmt(result.objective)} vs {fmt(base_obj)} "
                  f"{flag if flag != '-' else ''} ({seconds:.1f} s)", file=sys.stderr, flush=True)
        return Row(variant.task, variant.seed_file, variant.label, variant.kind, verdict,
                   "" if result.passed else (result.reason or "")[:160], result.objective, base_obj, ratio,
                   span_state(result), flag, round(seconds, 2))


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def table(rows: list[Row]) -> str:
    lines = ["| task | variant | kind | verdict | objective | baseline | ratio | span | flag | why rejected |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        why = r.reason.replace("|", "/").replace("\n", " ")[:70]
        lines.append(f"| {r.task} | {r.variant} | {r.kind} | {r.verdict} | {fmt(r.objective)} | "
                     f"{fmt(r.baseline)} | {fmt(r.ratio)} | {r.span} | {r.flag} | {why} |")
    return "\n".join(lines)


def summary(rows: list[Row]) -> str:
    per: dict[str, dict[str, int]] = {}
    for r in rows:
        for t in r.variant.split("+"):
            s = per.setdefault(t, {"variants": 0, "passed": 0, "rejected": 0, "escapes": 0})
            s["variants"] += 1
            s["passed" if r.verdict == "passed" else "rejected"] += 1
            s["escapes"] += r.flag in ("ESCAPE", "known")
    lines = ["| transformation | variants | passed | rejected | escapes (incl. known) |", "|---|---|---|---|---|"]
    for name in sorted(per):
        s = per[name]
        lines.append(f"| {name} | {s['variants']} | {s['passed']} | {s['rejected']} | {s['escapes']} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", help="comma-separated task names (default: every task in experiments/tasks)")
    p.add_argument("--variants", type=int, default=20, help="variants per task (singles first, then combinations)")
    p.add_argument("--seed", type=int, default=0, help="seed for the combinations and the verifier")
    p.add_argument("--max-combo", type=int, default=3, help="largest number of transformations combined")
    p.add_argument("--transforms", help="comma-separated subset of transformations (default: all)")
    p.add_argument("--hardware", default="h100", help="comma-separated hardware (default h100; 'task' for the task's list)")
    p.add_argument("--timeout", type=float, default=60.0, help="sandbox wall limit per verification (s)")
    p.add_argument("--jobs", type=int, default=1, help="verifications in parallel (each uses one core)")
    p.add_argument("--json", metavar="OUT", help="write the rows as JSON")
    p.add_argument("--smoke", action="store_true", help="a tiny run for the tests (relu, a few transformations)")
    p.add_argument("--list", action="store_true", help="list the transformations and exit")
    p.add_argument("--progress", action="store_true", help="one line per verified variant on stderr")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for t in TRANSFORMS.values():
            print(f"{t.name:24} {t.kind:8} {t.doc}")
        return 0
    only = tuple(args.transforms.split(",")) if args.transforms else None
    names = args.tasks.split(",") if args.tasks else sorted(p.stem for p in TASKS_DIR.glob("*.yaml"))
    if args.smoke:
        names, only, args.variants, args.max_combo = [SMOKE_TASK], SMOKE_TRANSFORMS, len(SMOKE_TRANSFORMS), 1
    unknown = [n for n in (only or ()) if n not in TRANSFORMS]
    if unknown:
        print(f"unknown transformations: {', '.join(unknown)}; see --list", file=sys.stderr)
        return 2
    hardware = None if args.hardware == "task" else args.hardware.split(",")
    team = RedTeam(hardware, args.timeout, args.seed, progress=args.progress)
    rng = random.Random(args.seed)
    variants: list[Variant] = []
    for name in names:
        task = load_task(TASKS_DIR / f"{name}.yaml")
        team.tasks[task.name] = task
        variants += make_variants(task, args.variants, rng, max_combo=args.max_combo, only=only)
    known = load_known()
    start = time.perf_counter()
    for (task_name, source) in {(v.task, v.baseline_source) for v in variants}:     # baselines first
        team.baseline(team.tasks[task_name], source)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda v: team.run(v, known), variants))
    print(table(rows))
    print()
    print(summary(rows))
    escapes = [r for r in rows if r.flag == "ESCAPE"]
    print(f"\n{len(rows)} variants of {len(names)} task(s) in {time.perf_counter() - start:.0f} s: "
          f"{sum(r.verdict == 'passed' for r in rows)} passed, {sum(r.flag == 'known' for r in rows)} known escapes, "
          f"{len(escapes)} new escapes.")
    for r in escapes:
        print(f"ESCAPE: {r.task} {r.seed_file} {r.variant}: objective {fmt(r.objective)} vs {fmt(r.baseline)}")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 1 if escapes else 0


if __name__ == "__main__":
    sys.exit(main())
