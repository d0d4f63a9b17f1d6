"""Import a candidate module from a temp file, check its shape (the load gate), guard calls into it.

The Triton interpreter reads kernel source with ``inspect.getsource``, so the
candidate is written to a real file and imported from it under a unique module
name.  Only ever called inside the sandboxed child (tests may call it directly
on trusted kernels).
"""

from __future__ import annotations

import importlib.util
import inspect
import signal
import sys
import threading
import time
import traceback
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

from ..candidate import ParamSpaceError, parse_param_space
from ..task import Task
from .arms import ARM_HELPER, _kf_arm, compile_host
from ..records import CPU_TIME_LIMIT, GateResult

MAX_REASON_CHARS = 600


class CandidateTimeout(BaseException):
    """A call into the candidate ran past its time limit (BaseException: hard to swallow)."""


#: A call's time limit counts the child's CPU seconds, so that a verdict does not depend on what else
#: the machine runs (search workers, other jobs); a call that blocks instead of computing is stopped
#: at WALL_FACTOR times the limit of wall-clock time.
WALL_FACTOR = 3.0


@contextmanager
def time_limit(seconds: float | None, what: str, *, cpu: bool = True) -> Iterator[None]:
    """Raise :class:`CandidateTimeout` in the main thread once the process has used *seconds* of CPU
    time in the block, or WALL_FACTOR x *seconds* of wall time (no-op outside the main thread).

    ``cpu=False``: *seconds* of wall time (a launch that waits on a device, where CPU time says nothing)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    wall = seconds * WALL_FACTOR if cpu else seconds

    def on_limit(signum, frame):
        if signum == signal.SIGPROF:
            raise CandidateTimeout(f"{what} did not finish within {seconds:g} {CPU_TIME_LIMIT}")
        waited = f" of wall-clock time: it waited, using less than {seconds:g} CPU seconds" if cpu else ""
        raise CandidateTimeout(f"{what} did not finish within {wall:g} s{waited}")

    timers = {signal.SIGALRM: (signal.ITIMER_REAL, wall)}
    if cpu:
        timers[signal.SIGPROF] = (signal.ITIMER_PROF, seconds)
    previous = {sig: signal.signal(sig, on_limit) for sig in timers}
    for timer, after in timers.values():
        signal.setitimer(timer, after)
    try:
        yield
    finally:
        for timer, _ in timers.values():
            signal.setitimer(timer, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _chain(exc: BaseException) -> list[BaseException]:
    out = [exc]
    while out[-1].__cause__ is not None and out[-1].__cause__ not in out:
        out.append(out[-1].__cause__)
    return out


def describe_exception(exc: BaseException, path: Path | str | None = None) -> str:
    """``Type: message (line N: code)`` for the LLM, locating the line in the candidate file."""
    chain = _chain(exc)
    root = chain[-1]
    message = f"{type(root).__name__}: {root}".strip()
    where = ""
    if path is not None:
        for link in reversed(chain):
            frames = [f for f in traceback.extract_tb(link.__traceback__) if f.filename == str(path)]
            if frames:
                frame = frames[-1]
                where = f" (line {frame.lineno}: {(frame.line or '').strip()})"
                break
    text = message + where
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS - 3] + "..."


@dataclass
class LoadedCandidate:
    """An imported candidate: its module, file, ``launch``, parameter space and kernels."""

    module: ModuleType
    path: Path
    launch: Callable[..., Any]
    param_space: dict[str, list[Any]]
    kernels: list[str] = field(default_factory=list)

    def unload(self) -> None:
        sys.modules.pop(self.module.__name__, None)


def import_candidate(source: str, directory: Path, *, inject: dict[str, Any] | None = None,
                     timeout: float | None = None) -> tuple[ModuleType, Path]:
    """Write *source* under *directory* and import it as a fresh, uniquely named module (its host
    branches instrumented, :mod:`arms`; the file keeps the source as written, which the interpreter
    reads the kernels from).

    *inject* names are placed in the module namespace before its code runs.
    """
    name = f"kf_candidate_{uuid.uuid4().hex[:12]}"
    path = Path(directory) / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(inject or {})
    module.__dict__[ARM_HELPER] = _kf_arm            # host branches record their arms (see arms.py)
    sys.modules[name] = module
    try:
        with time_limit(timeout, "importing the module"):
            exec(compile_host(source, str(path)), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module, path


def _kernel_names(module: ModuleType) -> list[str]:
    from triton.runtime.jit import KernelInterface
    return [name for name, value in vars(module).items() if isinstance(value, KernelInterface)]


def check_load(source: str, task: Task, directory: Path, *,
               timeout: float | None = 30.0) -> tuple[GateResult, LoadedCandidate | None]:
    """The load gate: PARAMS literal, import, runtime PARAMS, ``launch`` signature, jit kernels."""
    start = time.perf_counter()

    def fail(reason: str) -> tuple[GateResult, None]:
        return GateResult(name="load", passed=False, reason=reason,
                          seconds=time.perf_counter() - start), None

    try:
        space = parse_param_space(source)
    except ParamSpaceError as exc:
        return fail(f"PARAMS: {exc}.")
    try:
        module, path = import_candidate(source, directory, timeout=timeout)
    except CandidateTimeout as exc:
        return fail(f"importing the module timed out: {exc}; module-level code must not loop or block.")
    except BaseException as exc:   # noqa: BLE001 - the candidate's import may raise anything
        return fail(f"importing the module raised {describe_exception(exc)}{_import_location(exc, directory)}.")
    try:
        problem = _module_problem(module, space, task)
        kernels = [] if problem else _kernel_names(module)
    except Exception as exc:   # noqa: BLE001 - module attributes are candidate objects
        problem = f"the module's PARAMS/launch could not be inspected: {describe_exception(exc)}."
    if not problem and not kernels:
        problem = ("the module defines no @triton.jit kernel at top level; `launch` must run the "
                   "computation in Triton kernels.")
    if problem:
        sys.modules.pop(module.__name__, None)
        return fail(problem)
    gate = GateResult(name="load", passed=True, seconds=time.perf_counter() - start,
                      details={"kernels": kernels, "params": list(space)})
    return gate, LoadedCandidate(module=module, path=path, launch=module.launch, param_space=space,
                                 kernels=kernels)


def _same_params(runtime: Any, space: dict[str, list[Any]]) -> bool:
    return (isinstance(runtime, dict) and list(runtime) == list(space)
            and all(isinstance(v, (list, tuple)) and list(v) == space[k] for k, v in runtime.items()))


def _module_problem(module: ModuleType, space: dict[str, list[Any]], task: Task) -> str | None:
    """Why the imported module does not have the candidate shape, or ``None``."""
    if not _same_params(getattr(module, "PARAMS", None), space):
        return ("PARAMS changes at import time (the module's PARAMS value differs from its literal); "
                "define PARAMS once as a literal dict and never modify it.")
    expected = f"launch({', '.join(task.input_names)}, *, {', '.join(space)})"
    launch = getattr(module, "launch", None)
    if launch is None or not callable(launch):
        return f"the module defines no callable `launch(*inputs, **params)`; define `def {expected}` returning the output."
    try:
        inspect.signature(launch).bind(*task.input_names, **{name: values[0] for name, values in space.items()})
    except (TypeError, ValueError) as exc:
        return (f"`launch` must accept the task inputs ({', '.join(task.input_names)}) positionally and "
                f"every PARAMS name as a keyword, like `{expected}`; binding failed: {exc}.")
    return None


def _import_location(exc: BaseException, directory: Path) -> str:
    """`` (line N: code)`` for the deepest frame inside a candidate file of *directory*."""
    for link in reversed(_chain(exc)):
        frames = [f for f in traceback.extract_tb(link.__traceback__)
                  if Path(f.filename).parent == Path(directory) and Path(f.filename).name.startswith("kf_candidate_")]
        if frames:
            return f" at line {frames[-1].lineno}: {(frames[-1].line or '').strip()}"
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f" at line {exc.lineno}"
    return ""
