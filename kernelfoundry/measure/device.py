"""Which backend scores candidates: ``--device auto|cuda|model``.

``auto`` (the default) measures on the GPU when torch sees one (NVIDIA or ROCm builds) and
otherwise does exactly what the model-only search always did; ``cuda`` insists on a GPU (a
clear error, exit 2, without one); ``model`` never touches a device.

Tests drive the whole device path on a CPU with ``KERNELFOUNDRY_FAKE_DEVICE`` set (a JSON
:class:`~.timer.FakeTimer` spec, or ``1``): candidates then run in Triton's interpreter at the
check shapes and the fake timer answers.  It is never on unless that variable is set.
"""

from __future__ import annotations

import json
import os
import platform
from typing import Any

from ..errors import UserError

CHOICES = ("auto", "cuda", "model")
DEFAULT_TOP_K = 8
FAKE_ENV = "KERNELFOUNDRY_FAKE_DEVICE"


class DeviceError(UserError):
    """``--device cuda`` without a GPU, or a malformed device setting."""


def gpu_available() -> bool:
    """Whether torch sees a GPU (imports torch only when asked)."""
    import torch
    return bool(torch.cuda.is_available())


def describe_gpu(index: int = 0) -> dict[str, str]:
    """Device name, driver / runtime and torch version of GPU *index* (what a measurement is stored with)."""
    import torch
    props = torch.cuda.get_device_properties(index)
    hip = getattr(torch.version, "hip", None)
    driver = f"hip {hip}" if hip else f"cuda {torch.version.cuda}"
    try:
        import subprocess
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            driver += f", driver {out.stdout.strip().splitlines()[0]}"
    except (OSError, ValueError, Exception):  # noqa: BLE001 - the driver version is a label only
        pass
    return {"device": props.name, "driver": driver, "torch_version": torch.__version__,
            "backend": "hip" if hip else "cuda"}


def fake_spec(raw: str) -> dict[str, Any]:
    """The fake timer spec from ``$KERNELFOUNDRY_FAKE_DEVICE`` ("1" or a JSON object)."""
    if raw.strip() in ("1", "true", "yes"):
        return {"kind": "fake"}
    try:
        spec = json.loads(raw)
    except ValueError as exc:
        raise DeviceError(f"${FAKE_ENV} must be 1 or a JSON object (a fake timer spec); got {raw[:80]!r}: {exc}.") \
            from None
    if not isinstance(spec, dict):
        raise DeviceError(f"${FAKE_ENV} must be a JSON object; got {type(spec).__name__}.")
    return {**spec, "kind": "fake"}


def resolve_device(choice: str, *, top_k: int = DEFAULT_TOP_K, env: dict[str, str] | None = None,
                   gpus: int | None = None) -> dict | None:
    """The device spec the workers get (plain data), or None for the model alone.

    ``{"mode": "cuda" | "fake", "k": top_k, "timer": {...}, "device", "driver", "torch_version", "backend"}``.
    *gpus*: the GPUs a Ray cluster has (None: ask torch on this machine); on a cluster the device
    actors fill in the device's name and versions when they measure.
    """
    env = os.environ if env is None else env
    if choice not in CHOICES:
        raise DeviceError(f"--device must be one of {', '.join(CHOICES)}; got {choice!r}.")
    if not isinstance(top_k, int) or top_k < 1:
        raise DeviceError(f"--device-top-k must be a positive integer; got {top_k!r}.")
    if choice == "model":
        return None
    if env.get(FAKE_ENV):
        import torch
        return {"mode": "fake", "k": top_k, "timer": fake_spec(env[FAKE_ENV]), "device": "fake (CPU interpreter)",
                "driver": f"none ({platform.machine()})", "torch_version": torch.__version__, "backend": "fake"}
    if not (gpu_available() if gpus is None else gpus > 0):
        if choice == "cuda":
            raise DeviceError("--device cuda: torch sees no GPU here (torch.cuda.is_available() is False; a CPU "
                              "build of torch, no driver, or CUDA_VISIBLE_DEVICES empty). Use --device auto or "
                              "model to search on the performance model alone.")
        return None
    local = describe_gpu(0) if gpus is None else {}
    return {"mode": "cuda", "k": top_k, "timer": {"kind": "do_bench"}, **local}
