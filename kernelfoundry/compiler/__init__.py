"""The real compiler in the loop: compile candidates ahead of time for real GPUs, on the CPU.

Public API (see docs/compiler.md):

* :func:`compile_candidate` (``gate``): launch signatures per config x hardware -> :class:`CompileReport`;
  :func:`prestart_compile_servers`: start the compile job's fork servers in the background (a verify
  does while its trace runs); :func:`share_out`: keys in groups of about equal weight, heaviest first (its
  compile jobs, and the confirm gate's check jobs);
* :class:`LaunchSignature`, :func:`parse_signature` (``signature``): the JSON launch-signature record;
* :class:`LaunchRecorder`, :func:`signature_of_launch`, :func:`capture_signatures`,
  :func:`capture_task_signatures`: imported from their module, ``kernelfoundry.compiler.capture``, never
  through the package: capture imports and runs candidate code, which the verifier's judge (an importer
  of this package) must not reach (docs/architecture.md);
* :class:`CompileCache` (``cache``); :class:`CompiledResources` (``resources``);
* :func:`write_asm` (``asm``): PTX/SASS or AMDGCN of one config into a directory;
* :func:`resolve_target` (``targets``): hardware name -> Triton target, or why there is none;
* :data:`PTXAS_BROKER` (``ptxas_broker``): the sandbox broker that assembles PTX for a device job under
  seccomp (``run_sandboxed(broker=PTXAS_BROKER)``).
"""

from .asm import write_asm
from .cache import CompileCache, default_cache_dir, read_artifact
from .gate import compile_candidate, prestart_compile_servers, share_out
from .ptxas_broker import PTXAS_BROKER
from .report import CompileReport, ConfigCompile, HardwareCompile, KernelCompile
from .resources import CompiledResources
from .signature import ArgSpec, LaunchSignature, SignatureError, parse_signature
from .targets import NO_BACKEND, CompileTarget, parse_target, resolve_target


__all__ = ["PTXAS_BROKER", "ArgSpec", "CompileCache", "CompileReport", "CompileTarget", "CompiledResources", "ConfigCompile",
           "HardwareCompile", "KernelCompile", "LaunchSignature", "NO_BACKEND", "SignatureError",
           "compile_candidate", "default_cache_dir", "parse_signature", "parse_target", "prestart_compile_servers",
           "read_artifact", "resolve_target", "share_out", "write_asm"]
