"""The sandboxed compile job: import a candidate with Triton's interpreter off, lower its kernels.

``python -m kernelfoundry.compiler.job IN.json OUT.json``, run only through
``run_sandboxed(..., env={"TRITON_INTERPRET": "0"})`` because importing the
candidate runs its module code.  It runs Triton's in-process stages only
(source -> TTIR -> TTGIR -> LLVM IR -> PTX for NVIDIA; ... -> AMDGCN -> HSACO for
AMD, whose assembler and linker are linked into Triton's libraries); ``ptxas``
and the disassemblers are executables, which the sandbox's seccomp filter
forbids, so the trusted driver runs them on the PTX afterwards.

payload = {"source": str, "requests": [{"id": str, "signature": {...record...},
"target": "cuda:90:32", "options": {"ptx_version": 88}}], "max_asm_bytes": int (optional)}

result = {"load_error": str | None, "results": {id: {"ok": bool, "error": str,
"seconds": {stage: s}, "metadata": {...}, "asm": {"ptx": text} | {"amdgcn": text,
"hsaco_b64": text}}}, "done": bool}

OUT.json is rewritten (atomically) after every request, so a job killed mid-way
still reports what it finished; before each request the job appends
``compile <id>`` to ``$KF_SANDBOX_PROGRESS``, naming the one it died in.
"""

from __future__ import annotations

import base64
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

os.environ["TRITON_INTERPRET"] = "0"

import triton  # noqa: E402
from triton._C.libtriton import ir, llvm  # noqa: E402
from triton.backends.compiler import GPUTarget, Language  # noqa: E402
from triton.compiler.compiler import ASTSource, make_backend  # noqa: E402

from ..harness.job_main import job_main, report_progress  # noqa: E402
from ..safe_io import write_json_atomic  # noqa: E402

#: Triton metadata fields passed back (JSON scalars only).
METADATA_FIELDS = ("name", "shared", "num_warps", "num_ctas", "num_stages", "tmem_size", "global_scratch_size",
                   "profile_scratch_size", "enable_fp_fusion", "ptx_version", "arch", "warp_size")
MAX_ERROR_CHARS = 1500
DEFAULT_MAX_ASM_BYTES = 24 << 20


@triton.jit
def _warm_kernel(x_ptr, n, BLOCK: triton.language.constexpr):
    offs = triton.language.program_id(0) * BLOCK + triton.language.arange(0, BLOCK)
    x = triton.language.load(x_ptr + offs, mask=offs < n)
    triton.language.store(x_ptr + offs, triton.language.exp(x), mask=offs < n)


def _warm_up() -> None:
    """Load the code generators and lower a tiny kernel per backend once, in the fork server
    (not in a job), so every forked job starts with the compiler's lazy imports and caches done."""
    llvm.init_targets()
    sig = {"kernel": "_warm_kernel", "num_warps": 4, "num_stages": 1,
           "args": [{"name": "x_ptr", "kind": "pointer", "dtype": "fp32", "div16": True},
                    {"name": "n", "kind": "int", "dtype": "i32", "div16": True, "equals_one": False},
                    {"name": "BLOCK", "kind": "constexpr", "value": 128}]}
    for target, options in (("cuda:90:32", {"ptx_version": 80}), ("hip:gfx942:64", {})):
        try:
            with captured_stderr():
                compile_request(_warm_kernel, {"id": "warm-up", "signature": sig, "target": target,
                                               "options": options})
        except Exception:  # noqa: BLE001 - a backend that cannot warm up is reported by the real jobs
            pass


@contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """Redirect file descriptor 2 (MLIR/LLVM diagnostics go there) into a list of one string."""
    out: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read(1 << 20).decode("utf-8", "replace"))


def _kernel_table(module: Any) -> dict[str, Any]:
    """Function name -> JITFunction for every top-level kernel (through heuristics wrappers)."""
    from triton.runtime.jit import JITFunction, KernelInterface
    table: dict[str, Any] = {}
    for attr, value in list(vars(module).items()):
        depth = 0
        while isinstance(value, KernelInterface) and not isinstance(value, JITFunction) and depth < 8:
            value = getattr(value, "fn", None)
            depth += 1
        if isinstance(value, JITFunction):
            table.setdefault(value.fn.__name__, value)
            table.setdefault(attr, value)
    return table


def clean_error(text: str, module_path: str | None) -> str:
    """The compiler's message, trimmed for an LLM: temp paths replaced, long text cut in the middle."""
    if module_path:
        text = text.replace(module_path, "<kernel>")
    text = text.strip()
    if len(text) > MAX_ERROR_CHARS:
        half = MAX_ERROR_CHARS // 2
        text = text[:half] + "\n...\n" + text[-half:]
    return text


def compile_request(fn: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Lower one kernel for one target; returns ``{"asm", "metadata", "seconds"}`` (raises on failure)."""
    from .signature import parse_signature
    from .targets import parse_target
    sig = parse_signature(request["signature"], where=f"request {request['id']}")
    if list(fn.arg_names) != [a.name for a in sig.args]:
        raise ValueError(f"the signature lists parameters {[a.name for a in sig.args]} but {sig.kernel} takes "
                         f"{list(fn.arg_names)}")
    target = parse_target(request["target"])
    gpu = GPUTarget(target.backend, target.arch, target.warp_size)
    backend = make_backend(gpu)
    options = backend.parse_options({**sig.options(), **request.get("options", {})})
    signature, constexprs, attrs = sig.triton_inputs(backend.parse_attr)
    stages: dict[str, Any] = {}
    backend.add_stages(stages, options, Language.TRITON)
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    src = ASTSource(fn, signature, constexprs, attrs)
    module = src.make_ir(gpu, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                         context)
    seconds["frontend"] = time.perf_counter() - start
    metadata: dict[str, Any] = {"hash": request["id"], "target": gpu, **options.__dict__,
                                "triton_version": triton.__version__}
    asm: dict[str, str] = {}
    for ext, step in stages.items():
        if ext == "cubin":                   # ptxas is an executable: the driver runs it
            break
        t = time.perf_counter()
        module = step(module, metadata)
        seconds[ext] = time.perf_counter() - t
        if ext in ("ptx", "amdgcn"):
            asm[ext] = module
        elif ext == "hsaco":
            asm["hsaco_b64"] = base64.b64encode(module).decode("ascii")
    meta = {k: metadata[k] for k in METADATA_FIELDS if isinstance(metadata.get(k), (int, float, str, bool))}
    return {"asm": asm, "metadata": meta, "seconds": {k: round(v, 4) for k, v in seconds.items()}}


def run_job(payload: dict[str, Any], out_path: Path) -> dict[str, Any]:
    """Compile every request of *payload*, rewriting *out_path* after each; return the result."""
    if triton.knobs.runtime.interpret:
        raise RuntimeError("Triton's interpreter is on in the compile job (TRITON_INTERPRET must be 0)")
    from ..harness.loader import describe_exception, import_candidate
    result: dict[str, Any] = {"load_error": None, "results": {}, "done": False}
    budget = int(payload.get("max_asm_bytes", DEFAULT_MAX_ASM_BYTES))
    with tempfile.TemporaryDirectory(prefix="kf_compile_") as tmp:
        report_progress("load")
        try:
            module, path = import_candidate(payload["source"], Path(tmp), timeout=30.0)
        except BaseException as exc:  # noqa: BLE001 - the candidate's import may raise anything
            result["load_error"] = f"importing the module (interpreter off) raised {describe_exception(exc)}"
            result["done"] = True
            return result
        kernels = _kernel_table(module)
        for request in payload["requests"]:
            rid = str(request["id"])
            report_progress(f"compile {rid}")
            entry: dict[str, Any]
            name = request["signature"].get("kernel") if isinstance(request.get("signature"), dict) else None
            fn = kernels.get(name)
            if fn is None:
                entry = {"ok": False, "error": f"the module has no @triton.jit kernel named {name!r} "
                                               f"(kernels: {', '.join(sorted(kernels)) or 'none'})"}
            else:
                start = time.perf_counter()
                with captured_stderr() as diagnostics:
                    try:
                        entry = {"ok": True, "error": "", **compile_request(fn, request)}
                    except BaseException as exc:  # noqa: BLE001 - any compiler error is this request's failure
                        entry = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                if not entry["ok"] and diagnostics and diagnostics[0].strip():
                    entry["error"] += "\ncompiler diagnostics:\n" + diagnostics[0][-4000:]
                entry["error"] = clean_error(entry["error"], str(path))
                entry.setdefault("seconds", {})["job_request"] = round(time.perf_counter() - start, 4)
            size = sum(len(v) for v in entry.get("asm", {}).values())
            if size > budget:
                entry = {"ok": False, "error": f"the generated assembly is {size / 2**20:.1f} MB, over the "
                                               f"{budget / 2**20:.0f} MB left for this job's output",
                         "seconds": entry.get("seconds", {})}
            budget -= size if entry["ok"] else 0
            result["results"][rid] = entry
            write_json_atomic(out_path, result)
    result["done"] = True
    return result


def main(argv: list[str] | None = None) -> int:
    return job_main(argv, "kernelfoundry.compiler.job", run_job, {"results": {}, "done": False},
                    "compile job error")


if __name__ == "__main__":
    sys.exit(main())
else:                       # imported by the fork server (a job runs this module as __main__)
    _warm_up()
