"""What of the host's GPU the device job's sandbox sees, and Triton's driver made ready before seccomp.

Used only when ``run_sandboxed(..., gpu=True)`` (the device job).  The trusted driver computes
:func:`gpu_spec` on the host; the child (:mod:`.boot`) then

* binds :func:`gpu_paths` into its minimal root (root drivers only; :mod:`.fs`): the GPU device
  nodes that exist (``/dev/nvidia*``, ``/dev/nvidia-caps``, ``/dev/kfd``, ``/dev/dri``; device files stay
  usable on a read-only bind), the ``/sys`` parts the CUDA and ROCm user-space drivers read (read-only),
  and the directories holding ``libcuda.so*`` that the root does not already show (``ldconfig -p``).
  ``/proc`` (so ``/proc/driver/nvidia``) is bound whole already;
* before its seccomp filter, builds Triton's driver module (``cuda_utils``: a C file Triton compiles
  with the system's C compiler on first use, an exec) with :func:`prepare_triton_driver`, so the job
  finds it in its Triton cache.

The ptxas broker that Triton's cubin step needs there is the caller's (``broker=``, :mod:`.broker`).
"""

from __future__ import annotations

import glob
import os
import subprocess

DEVICE_GLOBS = ("/dev/nvidia[0-9]*", "/dev/nvidiactl", "/dev/nvidia-uvm*", "/dev/nvidia-modeset",
                "/dev/nvidia-caps", "/dev/kfd", "/dev/dri")
SYS_PATHS = ("/sys/devices", "/sys/bus/pci", "/sys/module/nvidia", "/sys/module/amdgpu", "/sys/class/drm",
             "/sys/class/kfd")
#: Host trees the minimal root shows anyway (``fs.readable_roots`` always includes /usr).
ALWAYS_VISIBLE = ("/usr",)


def libcuda_dirs(ldconfig_text: str) -> list[str]:
    """Directories of the ``libcuda.so*`` entries in ``ldconfig -p`` output."""
    dirs = []
    for line in ldconfig_text.splitlines():
        name, _, path = line.strip().partition(" => ")
        if name.startswith("libcuda.so") and path.startswith("/"):
            d = os.path.dirname(path.strip())
            if d not in dirs:
                dirs.append(d)
    return dirs


def _ldconfig() -> str:
    for exe in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):
        if os.path.exists(exe):
            try:
                return subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=20).stdout
            except (OSError, subprocess.SubprocessError):
                return ""
    return ""


def _covered(path: str, visible: tuple[str, ...]) -> bool:
    return any(path == v or path.startswith(v.rstrip("/") + "/") for v in visible)


def gpu_paths(host: str = "/", ldconfig_text: str | None = None,
              visible: tuple[str, ...] = ALWAYS_VISIBLE) -> list[str]:
    """Host paths (as spelled inside the sandbox) of the GPU pieces that exist under *host*.

    *host* is a root prefix (tests pass a fake layout); *ldconfig_text* defaults to ``ldconfig -p``
    of this machine; library directories under *visible* (after following links) are left out.
    Without a GPU device node, nothing (no ``/sys``, no libraries).
    """
    host = os.path.abspath(host)

    def inside(path: str) -> str:
        return os.path.join(host, path.lstrip("/"))

    def outside(path: str) -> str:
        rel = os.path.relpath(path, host)
        return "/" + ("" if rel == "." else rel)

    out: list[str] = []
    for pattern in DEVICE_GLOBS:
        out += sorted(outside(p) for p in glob.glob(inside(pattern)))
    if not out:                                          # no GPU here: nothing more to show
        return out
    out += [p for p in SYS_PATHS if os.path.exists(inside(p))]
    text = _ldconfig() if ldconfig_text is None else ldconfig_text
    for d in libcuda_dirs(text):
        real = os.path.realpath(inside(d))              # /lib/x86_64-linux-gnu -> /usr/lib/... on merged /usr
        if os.path.isdir(real) and real.startswith(host.rstrip("/") + "/"):
            spelled = outside(real)
            if not _covered(spelled, visible) and spelled not in out:
                out.append(spelled)
    return out


def gpu_spec(host: str = "/", ldconfig_text: str | None = None) -> dict:
    """The sandbox spec's ``gpu`` entry for the device job, computed by the trusted driver."""
    text = _ldconfig() if ldconfig_text is None else ldconfig_text
    paths = gpu_paths(host, text)
    cuda = [d for d in libcuda_dirs(text) if os.path.exists(os.path.join(host, d.lstrip("/"), "libcuda.so.1"))]
    nvidia = bool(cuda) and any(p.startswith("/dev/nvidia") for p in paths)
    env = {"TRITON_LIBCUDA_PATH": cuda[0]} if nvidia else {}     # else Triton runs `ldconfig -p` to find it
    return {"device_paths": paths, "env": env, "prepare_driver": nvidia}


def prepare_triton_driver() -> str:
    """Before the seccomp filter: compile Triton's ``cuda_utils`` into the job's Triton cache, with the
    arguments Triton's ``CudaUtils`` uses (so the same cache key); a note for the sandbox record."""
    try:
        from triton.backends.nvidia import driver
        from triton.runtime.build import compile_so_from_file
        compile_so_from_file(os.path.join(driver.dirname, "driver.c"), "cuda_utils",
                             library_dirs=driver.library_dirs(), include_dirs=driver.include_dirs,
                             libraries=driver.libraries)
    except Exception as exc:  # noqa: BLE001 - the job then reports what fails, inside the sandbox
        return f"Triton driver not prepared ({type(exc).__name__}: {exc})"[:300]
    return "Triton driver prepared"
