"""Set up one evolve session (new or resumed): task, hardware, run dir, Ray, workers, mutator."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..evaluate import TRACE_CACHE_FILE, VerifyOptions
from ..store import RunStore
from ..kernelbench import load_task_or_problem
from ..task import Task, task_from_dict
from .archive import ArchiveSpec, KernelArchive
from .cluster import cluster_cpus, missing_dependencies_hint, resolve_address, start_ray
from .history import spec_from_meta, spec_to_meta
from .loop import SearchDriver, SearchSettings
from .progress import ProgressLine
from .rundir import STORE_NAME, existing_run_dir, lock_run_dir, new_run_dir, open_run_store
from .workers import ClusterLost, KernelWorker, WorkerPool

__all__ = ["run_evolution", "start_ray"]


def run_evolution(cfg, *, worker_cls: type = KernelWorker, stop=None) -> tuple[dict[str, Any], Path]:
    """Run (or resume) a search as configured by an ``EvolveConfig``; returns (summary, run_dir).

    *stop* (a ``threading.Event``, set by a bench running runs side by side) interrupts the run.
    """
    from .config import config_to_meta
    with contextlib.ExitStack() as cleanup:          # the store and the run's lock, on every way out
        progress = ProgressLine(cfg.budget, quiet=cfg.quiet)
        if cfg.resume is not None:
            run_dir = existing_run_dir(cfg.resume)
            cleanup.callback(os.close, lock_run_dir(run_dir))
            store = open_run_store(run_dir)
            cleanup.callback(store.close)
            stored = store.get_meta("config") or {}
            stored_task = store.get_meta("task")
            if list(stored_task) == sorted(stored_task) and len(stored_task.get("inputs", {})) > 1:
                raise UserError(f"--resume {run_dir}: this run was stored by an older KernelFoundry that sorted the "
                                "task's inputs by name, so their launch order is lost; start a new run.")
            task = task_from_dict(stored_task, check_files=False)
            if cfg.task is not None and load_task_or_problem(cfg.task, allow_no_seed=True).name != task.name:
                raise UserError(f"--resume {run_dir} is a run of task '{task.name}', not of {cfg.task}.")
            _check_resume_options(cfg, stored, run_dir)
            for key in RESUME_KEEPS:
                setattr(cfg, key, stored.get(key, getattr(cfg, key)))
            done = store.candidate_count()
            progress.message(f"resuming {run_dir}: {done} candidates stored, budget {cfg.budget}")
            seeds = [(str(name), str(src)) for name, src in store.get_meta("seeds") or []]
        else:
            # with an LLM, a task without a seed is run: the LLM drafts its first kernel (search/drafts.py)
            task = load_task_or_problem(cfg.task, allow_no_seed=bool(cfg.models))
            run_dir = None
            seeds = [(p.name, src) for p, src in _read_seeds(task)]     # before a run directory exists
            # memory seeds are added once the run directory exists (below) and stored with the others
        if cfg.prompt_dir:
            cfg.prompt_dir = Path(cfg.prompt_dir).resolve()     # stored absolute: --resume may run elsewhere
        hardware = cfg.hardware or list(task.hardware)
        try:
            _check_hardware(hardware)
        except UserError as exc:
            if cfg.hardware:
                raise
            raise UserError(f"task file {task.path or task.name}, field 'hardware': {exc}") from None
        device = _local_device(cfg)            # --device cuda without a GPU stops here, before a run directory
        mutator_spec, prompt_pool, llm_client, model_note = _mutator_setup(cfg, task, seeds)
        memory = _open_memory(cfg, task, hardware, mutator_spec, progress, cleanup)  # before a run dir exists
        if cfg.resume is None:
            run_dir = new_run_dir(task.name, out=cfg.out, root=cfg.archives_root)
            cleanup.callback(os.close, lock_run_dir(run_dir))
            store = RunStore(run_dir / STORE_NAME)
            cleanup.callback(store.close)
            if memory is not None:
                seeds += memory.cold_start_seeds(task, {src for _, src in seeds})
            cfg.hardware = hardware
            store.set_meta("task", task.to_dict())
            store.set_meta("config", config_to_meta(cfg))
            store.set_meta("archive_spec", spec_to_meta(ArchiveSpec.default()))
            store.set_meta("seeds", [list(s) for s in seeds])     # a resume evaluates those not stored yet
        if memory is not None:
            memory.run = str(Path(run_dir).resolve())
        if prompt_pool is not None:
            records = store.load_prompts()
            if records:
                prompt_pool = type(prompt_pool).from_records(records, prompt_dir=prompt_pool.prompt_dir, seed=cfg.seed)
            elif memory is not None:
                memory.prime_prompts(prompt_pool)
        progress.message(f"task {task.name}: budget {cfg.budget}, hardware {', '.join(hardware)}, "
                         f"strategy {cfg.strategy}; {model_note}")
        progress.message(f"run directory: {run_dir}")
        started_ray = start_ray(workers=cfg.workers, address=cfg.ray_address)
        on_cluster = resolve_address(cfg.ray_address) is not None or not started_ray
        pool = None
        try:
            n_workers, cpus_each = _worker_count(cfg.workers, on_cluster, progress)
            verify_options = VerifyOptions(max_kernel_configs=cfg.max_kernel_configs, tune=cfg.tuning)
            # the workers' task names the run's hardware: prompts describe what the run targets
            init = {"task": dict(task.to_dict(), hardware=list(hardware)), "hardware": hardware,
                    "mutator": mutator_spec,
                    "verify_options": verify_options,
                    # extra verifier jobs on idle CPUs only where the workers leave two CPUs each
                    "side_by_side": not on_cluster and 2 * n_workers <= (os.cpu_count() or 1)}
            if cfg.trace_cache:
                init["trace_cache"] = str(Path(run_dir).resolve() / TRACE_CACHE_FILE)
            if cfg.verdict_cache is not None:
                init["verdict_cache"] = str(cfg.verdict_cache)
            device = _device_workers(cfg, device, on_cluster, hardware, progress)
            if device is not None:
                init["device"] = device
            pool = WorkerPool(n_workers, worker_cls, init, num_cpus=cpus_each)
            try:
                pool.ready()
            except Exception as exc:
                raise UserError(f"Ray could not start {n_workers} workers: {type(exc).__name__}: {exc}."
                                + (missing_dependencies_hint(exc) or
                                   " Check that every node has the project's dependencies (docs/cluster.md) "
                                   "and that Ray has CPUs free.")) from None
            nodes = pool.workers_per_node()
            progress.message(f"{n_workers} Ray worker(s) ready on {len(nodes)} node(s): "
                             + ", ".join(f"{label} {k}" for label, k in nodes.items()))
            routing = _routing_hook(cfg, task, hardware, mutator_spec, memory)
            driver = SearchDriver(task=task, settings=SearchSettings(budget=cfg.budget, workers=n_workers,
                                                                     seed=cfg.seed, hardware=hardware,
                                                                     strategy=cfg.strategy, max_cost=cfg.max_cost,
                                                                     max_llm_seconds=cfg.max_llm_seconds,
                                                                     stop=stop),
                                  routing=routing,
                                  store=store, run_dir=run_dir, pool=pool, progress=progress,
                                  prompt_pool=prompt_pool, llm_client=llm_client, memory=memory,
                                  archive=KernelArchive(spec_from_meta(store.get_meta("archive_spec")), seed=cfg.seed))
            try:
                summary = driver.run(seeds)
            except ClusterLost as exc:
                pool = None                       # nothing left to kill, and Ray would wait on the lost head
                started_ray = False
                where = f"the Ray cluster at {resolve_address(cfg.ray_address)}" if on_cluster else "Ray"
                raise UserError(f"lost {where}: {exc}. Every finished candidate is stored; continue with "
                                f"--resume {run_dir} once the cluster is back (or without --ray-address to "
                                "go on locally).") from None
        except KeyboardInterrupt as exc:
            exc.run_dir = run_dir                  # for the "continue with --resume" message
            raise
        finally:
            if pool is not None:
                pool.shutdown()
            if started_ray:
                import ray
                ray.shutdown()
        return summary, run_dir


def _local_device(cfg) -> dict | None:
    """The device spec when this machine decides (no cluster): raises for ``--device cuda`` without a GPU."""
    from ..measure import resolve_device
    if cfg.device == "model" or resolve_address(cfg.ray_address) is not None:
        return None
    return resolve_device(cfg.device, top_k=cfg.device_top_k)


def _device_workers(cfg, local: dict | None, on_cluster: bool, hardware: list[str], progress) -> dict | None:
    """What the workers measure with: a fake device in-process (tests), or one Ray actor with ``num_gpus=1``
    per GPU of the cluster (CPU-only workers keep proposing and verifying; they call these to measure)."""
    import ray

    from ..measure import resolve_device
    from ..measure import DeviceMeasurer
    if cfg.device == "model" or (local is None and not on_cluster):
        return None                                   # the model alone: nothing asked of Ray
    gpus = int(ray.cluster_resources().get("GPU", 0))
    spec = resolve_device(cfg.device, top_k=cfg.device_top_k, gpus=gpus) if on_cluster else local
    if spec is None:
        return None
    if spec["mode"] == "fake":
        progress.message("device: fake timer on the CPU interpreter ($KERNELFOUNDRY_FAKE_DEVICE; tests only)")
        return {"spec": spec}
    if gpus == 0:
        raise UserError("--device: torch sees a GPU but Ray lists none (ray.cluster_resources() has no 'GPU'); "
                        "start Ray with --num-gpus, or use --device model.")
    actor = ray.remote(num_gpus=1, num_cpus=0, max_restarts=1)(DeviceMeasurer)
    actors = [actor.remote(spec) for _ in range(gpus)]
    names = ray.get([a.ping.remote() for a in actors], timeout=300)
    progress.message(f"device: {gpus} GPU actor(s) ({', '.join(sorted(set(names)))}); the model's "
                     f"{spec['k']} fastest configs per target shape are timed; predictions on {hardware[0]}")
    return {"spec": spec, "actors": actors}


#: settings a resumed run keeps from its start, and the flag that sets each
RESUME_KEEPS = {"seed": "--seed", "hardware": "--hardware", "models": "--model", "strategy": "--strategy",
                "prompt_evolution": "--no-prompt-evolution", "tuning": "--no-tuning",
                "max_kernel_configs": "--max-kernel-configs", "prompt_dir": "--prompts",
                "memory": "--memory", "memory_mode": "--no-memory", "device_top_k": "--device-top-k",
                "routing": "--routing"}


def _routing_hook(cfg, task: Task, hardware: list[str], mutator_spec: dict, memory):
    """The run's LLM router (docs/llm.md, "Routing"), or None for the built-in mutator."""
    if mutator_spec.get("type") != "llm":
        return None
    from ..memory import signature_of
    from .routing import RoutingHook
    op_kind = memory.sig.op_kind if memory is not None else signature_of(task, hardware).op_kind
    priors = memory.priors if memory is not None and memory.read else None
    return RoutingHook(mutator_spec["models"], policy=getattr(cfg, "routing", None), op_kind=op_kind,
                       priors=priors, max_cost=cfg.max_cost, max_seconds=getattr(cfg, "max_llm_seconds", None))


def _open_memory(cfg, task: Task, hardware: list[str], mutator_spec: dict, progress,
                 cleanup: contextlib.ExitStack):
    """The run's view of the experience memory (docs/memory.md), or None with --no-memory."""
    from ..memory import RunMemory, resolve_memory_path
    path = resolve_memory_path(cfg.memory, cfg.archives_root, enabled=cfg.memory_mode != "off")
    builtin = mutator_spec.get("type") == "builtin"
    if path is None:
        progress.message("memory: off" + (" (the operator bandit learns from this run only)" if builtin else ""))
        if not builtin:
            return None
    ops = None
    if builtin:
        from ..mutate import OPERATORS
        ops = {op.name: (op.kind, float(op.weight)) for op in OPERATORS}
    memory = RunMemory.open(path, task, hardware, read=cfg.memory_mode == "on", builtin_operators=ops,
                            log=progress.message)
    cleanup.callback(memory.close)
    if path is None:
        return memory
    n_similar = sum(int(p.n) for p in memory.priors[2].values()) if memory.read else 0
    progress.message(f"memory: {path} ({'read and write' if memory.read else 'write only'}; "
                     f"{memory.sig.op_kind} task, {n_similar} weighted refine experiences of similar tasks)")
    return memory


def _check_resume_options(cfg, stored: dict[str, Any], run_dir: Path) -> None:
    """Refuse options given for a resume that differ from the run's own settings."""
    clashes = []
    for key, flag in RESUME_KEEPS.items():
        if key not in cfg.explicit or key not in stored:
            continue
        given, kept = getattr(cfg, key), stored[key]
        if key == "prompt_dir" and given is not None:
            given = str(Path(given).resolve())
        if key == "memory" and given is not None:
            given = str(given)
        if given != kept:
            clashes.append(f"{flag} {given!r} (the run has {kept!r})")
    if clashes:
        raise UserError(f"--resume {run_dir} keeps the settings the run started with; given otherwise: "
                        + "; ".join(clashes) + ". Drop these options, or start a new run.")


def _read_seeds(task: Task) -> list[tuple[Path, str]]:
    out = []
    for i, path in enumerate(task.seeds):
        try:
            out.append((path, path.read_text(encoding="utf-8")))
        except OSError as exc:
            raise UserError(f"cannot read seed kernel seeds[{i}] = {path}: {exc.strerror}.") from None
        except UnicodeDecodeError as exc:
            raise UserError(f"seed kernel seeds[{i}] = {path} is not UTF-8 text ({exc.reason} at byte "
                            f"{exc.start}).") from None
    return out


def _check_hardware(names: list[str]) -> None:
    from ..perfmodel import resolve_hardware
    resolve_hardware(names)     # raises HardwareError naming the unknown name


def _mutator_setup(cfg, task: Task, seeds: list[tuple[str, str]]):
    """Pick the mutator: LLM when models are configured, else the built-in offline one."""
    if not cfg.models and not task.models:
        if task.no_seed_reason:
            raise UserError(f"task {task.name} has no seed kernel ({task.no_seed_reason}) and no LLM is configured "
                            "to draft one: give a seed, or an LLM with --model NAME (docs/llm.md, \"Drafts\").")
        note = "no LLM model configured: using the built-in offline mutator"
        if cfg.prompt_dir:
            note += f" (--prompts {cfg.prompt_dir} is unused without a model)"
        if getattr(cfg, "routing", None):
            note += f" (--routing {cfg.routing} is unused without a model)"
        return {"type": "builtin"}, None, None, note
    from ..mutate import LLMClient, parse_model_specs
    specs = parse_model_specs(list(task.models), list(cfg.models))
    prompt_dir = str(cfg.prompt_dir) if cfg.prompt_dir else None
    spec = {"type": "llm", "models": [dataclasses.asdict(s) for s in specs], "prompt_dir": prompt_dir}
    if prompt_dir:                          # sent along: a worker on another node has no such directory
        spec["prompt_files"] = {p.name: p.read_text(encoding="utf-8") for p in sorted(Path(prompt_dir).iterdir())
                                if p.is_file() and (p.suffix == ".j2" or p.name == "variants.yaml")}
    pool = client = None
    note = "LLM mutation with " + ", ".join(s.name for s in specs)
    if cfg.prompt_evolution:
        from ..mutate import PromptPool
        pool = PromptPool.from_prompt_dir(prompt_dir, seed=cfg.seed)
        client = LLMClient(models=specs, seed=cfg.seed)
        note += "; prompt evolution on"
    else:
        note += "; prompt evolution off"
    from ..mutate import PromptRenderer
    renderer = PromptRenderer(prompt_dir)   # every template must load and render before Ray starts
    variants = list(pool.variants.values()) if pool is not None else None
    renderer.check_renders(task, seeds[0][1] if seeds else "PARAMS = {}\n", variants)
    if task.no_seed_reason:                 # the run starts with drafts (search/drafts.py)
        renderer.check_draft_renders(task)
        note += "; no seed kernel: the LLM drafts the first one"
    return spec, pool, client, note


def _worker_count(workers: int, on_cluster: bool, progress) -> tuple[int, float]:
    """(workers, CPUs each): ``--workers 0`` means one per CPU of the cluster (or this machine).

    On a cluster ``--workers`` may exceed the driver machine's CPUs; beyond the cluster's own,
    each worker gets a share of a CPU (LLM-bound workers mostly wait) instead of never starting.
    """
    total = cluster_cpus() if on_cluster else float(max(os.cpu_count() or 1, workers or 1))
    n = workers or max(1, int(total))
    if n <= total or total <= 0:
        return n, 1.0
    share = total / n
    progress.message(f"--workers {n} exceeds the {total:g} CPUs Ray has: each worker reserves {share:.2f} CPU")
    return n, share
