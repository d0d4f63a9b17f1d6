"""Write GEMM reference datasets from NVIDIA's matmul heuristics: runtime ESTIMATES, not measurements.

    pip install --target /tmp/nvmh_site nvidia-matmul-heuristics==0.1.0.27
    PYTHONPATH=/tmp/nvmh_site python experiments/fidelity/import_nvmatmul_heuristics.py

Source: the PyPI wheel ``nvidia-matmul-heuristics`` 0.1.0.27 (``nvMatmulHeuristics``, a ctypes wrapper of
``libnvMatmulHeuristics.so.0``; runs on the CPU from a predefined GPU descriptor).  Only this script imports it.
Per problem: ``NvMatmulHeuristicsInterfaceEx(backend=TRITON, flags=PERF_MODEL_BASED_AUTO_TUNING, gpu=...)`` with the
internal discovery set loaded, ``get(problem, 8, precision="HSH")`` (fp16 A, B; fp32 compute; fp16 C, D), layout
NN_ROW_MAJOR (A [M, K] and B [K, N] row-major, neither transposed); the TOP-1 config and the library's runtime
estimate for it (``nvMatmulHeuristicsEstimateRuntime``).  GPUs: H100_SXM -> h100, A100_SXM_80GB -> a100,
H200_SXM -> h200.  The estimate comes from NVIDIA's calibrated analytic model: these rows compare two models.

The kernel model predicts ``triton_tutorial/matmul_tiles.py`` (the tutorial GEMM, open tile list) at the top-1
config: TILE = CTA tile, num_stages = load stages, num_warps = CTA tile / warp tile, GROUP_SIZE_M = 8 (swizzle and
raster order not mapped).  Skipped, and counted in the notes: split-K > 1, a tile side not a power of two >= 16,
no warp tile, K not a multiple of BK (written when the tracer refused this kernel's ragged last K step: fixed on
2026-11-30, the rule and the shapes are kept so the committed rows stay comparable).

Shapes (SHAPES, the same on every GPU): square 512 ... 8192; K = 64, 128, 256 at M = N = 4096, 8192; skinny
M = 16 ... 128 at N = K = 4096 and M = 16, 128 at N = K = 8192; irregular, no side a multiple of 128 (M, N in 1000
... 5000; K an odd multiple of 64).  One task per group (``triton_tutorial/matmul_nvmmh_<group>.yaml``, written
here) and so one trace cache each: one verifier job tracing all 336 (tile, shape) pairs overflows the sandbox's
64 MiB file limit.  Held out: nothing is fitted on these rows (``crossval.NEVER_FITTED``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys

from import_shared import HERE, _yaml

PACKAGE = "nvidia-matmul-heuristics"
VERSION = "0.1.0.27"
PRECISION = "HSH"
COUNT = 8                  # configs requested; the top-1 does not depend on it
GROUP_SIZE_M = 8
#: hardware file -> the library's predefined GPU (NvMatmulHeuristicsNvidiaGpu)
GPUS = {"h100": "H100_SXM", "a100": "A100_SXM_80GB", "h200": "H200_SXM"}
KERNEL = "triton_tutorial/matmul_tiles.py"

#: (group, M, N, K) in dataset order.
SHAPES = tuple(
    [("square", s, s, s) for s in (512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)]
    + [("small-K", mn, mn, k) for mn in (4096, 8192) for k in (64, 128, 256)]
    + [("skinny", m, 4096, 4096) for m in (16, 32, 64, 128)] + [("skinny", m, 8192, 8192) for m in (16, 128)]
    + [("irregular", 1000, 1000, 960), ("irregular", 1500, 1500, 1472), ("irregular", 3000, 3000, 3008),
       ("irregular", 5000, 5000, 5056), ("irregular", 1000, 3000, 1472), ("irregular", 3000, 1000, 5056),
       ("irregular", 5000, 1500, 960)])


def _pow2(v: int) -> bool:
    return v >= 16 and v & (v - 1) == 0


def heuristic(nv, gpu: str):
    """A function (M, N, K) -> (top-1 config, estimated seconds) of the library on *gpu*."""
    h = nv.NvMatmulHeuristicsInterfaceEx(backend=nv.NvMatmulHeuristicsTarget.TRITON,
                                        flags=nv.NvMatmulHeuristicsFlags.PERF_MODEL_BASED_AUTO_TUNING,
                                        gpu=getattr(nv.NvMatmulHeuristicsNvidiaGpu, gpu))
    layout = nv.NvMatmulHeuristicsMatmulLayout.NN_ROW_MAJOR
    if not h.loadInternalDiscoverySet(layout, PRECISION):
        sys.exit(f"{PACKAGE}: no internal discovery set for TRITON / {PRECISION} / NN_ROW_MAJOR on {gpu}")

    def top1(m: int, n: int, k: int):
        out = h.get(h.makeNvMatmulHeuristicsProblem(m, n, k, layout), COUNT, precision=PRECISION)
        if not out:
            sys.exit(f"{PACKAGE} returned no config for {m}x{n}x{k} on {gpu}")
        return out[0]["kernel"], out[0]["runtime"]
    return top1


def mapped(c, k: int) -> tuple[dict | None, str]:
    """(the kernel's config, description) of a heuristic config at reduction size *k*; config None when the
    kernel (or the tracer) cannot run it."""
    tile = (c.cta_tile_m, c.cta_tile_n, c.cta_tile_k)
    warps = (c.cta_tile_m // c.warp_tile_m) * (c.cta_tile_n // c.warp_tile_n) * (c.cta_tile_k // c.warp_tile_k) \
        if c.warp_tile_m and c.warp_tile_n and c.warp_tile_k else 0
    text = (f"CTA {'x'.join(map(str, tile))}, warp {c.warp_tile_m}x{c.warp_tile_n}x{c.warp_tile_k} ({warps} warps), "
            f"{c.stages} stages, split-K {c.split_k}, swizzle {c.swizzle_factor}, CTA order {c.cta_order}, "
            f"cluster {c.cluster_m}x{c.cluster_n}")
    if c.split_k > 1:
        return None, f"split-K {c.split_k}: {text}"
    if not all(_pow2(v) for v in tile):
        return None, f"tile not powers of two >= 16: {text}"
    if not warps:
        return None, f"no warp tile: {text}"
    if k % c.cta_tile_k:
        return None, f"ragged last K step (K % {c.cta_tile_k} != 0; the tracer rejects it): {text}"
    return {"TILE": "x".join(map(str, tile)), "GROUP_SIZE_M": GROUP_SIZE_M, "num_warps": warps,
            "num_stages": c.stages}, text


def task_path(group: str) -> str:
    return f"triton_tutorial/matmul_nvmmh_{group.lower().replace('-', '_')}.yaml"


def task_text(group: str) -> str:
    """The task file of one group of SHAPES (its target shapes)."""
    shapes = "\n".join(f"    - {{M: {m}, N: {n}, K: {k}}}" for g, m, n, k in SHAPES if g == group)
    return f"""# Generated by experiments/fidelity/import_nvmatmul_heuristics.py: the {group} shapes of the nvmmh_* datasets.
# fp16 A [M, K] @ B [K, N], both row-major, fp32 accumulation, fp16 output; kernel matmul_tiles.py (the
# tutorial kernel, open tile list).  One task per group of shapes, each with its own trace cache.
name: triton_tutorial_matmul_nvmmh_{group.lower().replace('-', '_')}
level: 1
description: C = A @ B for fp16 A [M, K] and B [K, N]; fp32 accumulation, fp16 output.
reference: |
  import torch
  def reference(a, b):
      return a @ b
inputs:
  a: {{shape: [M, K], dtype: float16}}
  b: {{shape: [K, N], dtype: float16}}
shapes:
  check:
    - {{M: 64, N: 48, K: 80}}
    - {{M: 33, N: 65, K: 17}}
  target:
{shapes}
# fp16 output: a few roundings (2^-11 relative) of slack, as matmul.yaml.
tolerance: {{atol: 2.0e-2, rtol: 2.0e-2}}
seeds: [matmul_tiles.py]
hardware: [{", ".join(GPUS)}]
"""


def check_kernel(tiles: set[str]) -> None:
    """The kernel's TILE list holds every tile used (exit 1 otherwise)."""
    from kernelfoundry.candidate import parse_param_space
    missing = sorted(tiles - set(parse_param_space((HERE / KERNEL).read_text())["TILE"]))
    if missing:
        sys.exit(f"{KERNEL}: PARAMS['TILE'] lacks {', '.join(missing)}; add them (every (tile, shape) pair is traced).")


def a100_note(nv) -> str:
    """How the library's A100 SXM4 and PCIe descriptors compare with each other and with Triton's published
    tutorial timings on an A100 80GB (import_triton_tutorial.py), at the tutorial's square sizes."""
    import math
    from import_triton_tutorial import FP16_TFLOPS, SHAPES as TUTORIAL_SIZES, ms
    measured = {m: ms(m, triton) for m, _, triton in FP16_TFLOPS}
    sxm, pcie = heuristic(nv, "A100_SXM_80GB"), heuristic(nv, "A100_PCIE_80GB")

    def geomean(gpu) -> float:
        ratios = [gpu(m, m, m)[1] * 1e3 / measured[m] for m in TUTORIAL_SIZES]
        return math.exp(sum(map(math.log, ratios)) / len(ratios))
    return (f"Suspicious: at the Triton tutorial's square sizes ({TUTORIAL_SIZES[0]} ... {TUTORIAL_SIZES[-1]}) the "
            f"library's top-1 estimates on A100_SXM_80GB are {geomean(sxm):.2f}x the tutorial's published autotuned "
            f"timings on an A100 80GB (triton_tutorial_a100.yaml), on A100_PCIE_80GB {geomean(pcie):.2f}x: the SXM4 "
            f"descriptor is the slower of the two, although the SXM4 board is the faster.")


def build(nv, version: str) -> list[dict]:
    source = {"package": f"{PACKAGE} {version} (PyPI wheel; module nvMatmulHeuristics, libnvMatmulHeuristics.so.0)",
              "method": f"NvMatmulHeuristicsInterfaceEx(backend=TRITON, flags=PERF_MODEL_BASED_AUTO_TUNING, gpu=GPU) "
                        f"with the internal discovery set loaded; get(problem, {COUNT}, precision='{PRECISION}') for "
                        f"layout NN_ROW_MAJOR; the top-1 config and its runtime estimate "
                        f"(nvMatmulHeuristicsEstimateRuntime, seconds): measured_ms = estimate * 1e3. An ESTIMATE of "
                        f"NVIDIA's calibrated model, not a measurement."}
    out = []
    for hardware, gpu in GPUS.items():
        top1 = heuristic(nv, gpu)
        rows, skipped = [], []
        for group, m, n, k in SHAPES:
            c, seconds = top1(m, n, k)
            config, text = mapped(c, k)
            shape_id = f"{group}/{m}x{n}x{k}"
            if config is None:
                skipped.append(f"{shape_id} ({text})")
                continue
            tflops = 2.0 * m * n * k / seconds / 1e12
            rows.append({"id": shape_id, "kind": "matmul", "measured_ms": seconds * 1e3,
                         "note": f"estimate, {tflops:.1f} TFLOPS; heuristic top-1: {text}",
                         "task": task_path(group), "kernel": KERNEL, "shape": {"M": m, "N": n, "K": k},
                         "config": config})
        notes = [
            f"measured_ms is NOT a measurement: it is the runtime that {PACKAGE} {version} ESTIMATES (its calibrated "
            f"analytic model, TRITON target, predefined {gpu} descriptor, {PRECISION}: fp16 inputs, fp32 compute, "
            f"fp16 output; NN_ROW_MAJOR) for its own top-1 config. The rows compare two models.",
            f"Config mapping: TILE = the heuristic's CTA tile, num_stages = its load stages, num_warps = CTA tile / "
            f"warp tile, GROUP_SIZE_M = {GROUP_SIZE_M}; its swizzle factor and CTA raster order are not mapped (the "
            f"kernel always groups {GROUP_SIZE_M} tile rows).",
            f"Shapes: {len(SHAPES)} fp16 problems, the same on every GPU (import_nvmatmul_heuristics.SHAPES): square "
            f"512 ... 8192, small K (64 ... 256) at M = N = 4096 / 8192, skinny M (16 ... 128), irregular sizes that "
            f"no 128 divides (K a multiple of 64: the tracer refused a ragged last K step of this kernel when these "
            f"rows were written).",
            f"Kept {len(rows)} of {len(SHAPES)}; skipped {len(skipped)} whose top-1 config the tutorial kernel cannot "
            f"run as is" + (": " + "; ".join(skipped) if skipped else "") + ".",
            "Held out: no rule constant or hardware figure was fitted on these rows (crossval.NEVER_FITTED)."]
        if hardware == "a100":
            notes.insert(1, a100_note(nv))
        out.append({"dataset": f"nvmmh_{hardware}",
                    "description": f"Runtimes that NVIDIA's matmul heuristics ({PACKAGE} {version}) ESTIMATE for an "
                                   f"fp16 Triton GEMM on the {gpu} descriptor with its top-1 config, predicted by the "
                                   f"kernel model from triton_tutorial/matmul_tiles.py (the Triton tutorial's grouped "
                                   f"GEMM) at that config. A calibrated model, not a measurement. Held out: nothing "
                                   f"was fitted on these rows.",
                    "predictor": "kernel", "hardware": hardware, "timing": "do_bench", "origin": "estimate",
                    "source": source,
                    "notes": notes, "rows": rows})
    return out


def main(argv: list[str]) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    try:
        import nvMatmulHeuristics as nv
    except ImportError:
        sys.exit(f"needs {PACKAGE} {VERSION}: pip install --target /tmp/nvmh_site {PACKAGE}=={VERSION} and run with "
                 f"PYTHONPATH=/tmp/nvmh_site")
    version = importlib.metadata.version(PACKAGE)
    if version != VERSION:
        print(f"warning: {PACKAGE} {version} installed, the datasets were written with {VERSION}", file=sys.stderr)
    datasets = build(nv, version)
    check_kernel({r["config"]["TILE"] for d in datasets for r in d["rows"]})
    for group in dict.fromkeys(g for g, *_ in SHAPES):
        path = HERE / task_path(group)
        if not path.is_file() or path.read_text() != task_text(group):   # rewriting the same text keeps its traces
            path.write_text(task_text(group))
            print(f"wrote {path}")
    for data in datasets:
        head = (f"# Generated by experiments/fidelity/import_nvmatmul_heuristics.py from {PACKAGE} {version}: "
                f"runtime ESTIMATES of a calibrated model,\n# not measurements.  Format: docs/fidelity.md.  Do not "
                f"edit by hand; rerun the script.\n")
        path = HERE / f"{data['dataset']}.yaml"
        path.write_text(head + _yaml(data))
        print(f"wrote {path}: {len(data['rows'])} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
