"""Write the Triton tutorial-03 GEMM datasets from the timings Triton's documentation build printed.

    python experiments/fidelity/import_triton_tutorial.py [--page FILE]

Source: triton-lang/triton, branch gh-pages (the documentation site's build output, committed by the
project's documentation workflow), file ``main/_sources/getting-started/tutorials/03-matrix-multiplication.rst.txt``
at commit ``22f4a18254d1d7b05eb305a4b22c993f49ad8c4e``.  The page runs the tutorial's benchmark and prints,
for square fp16 matrices M = N = K = 256 ... 4096 (step 128), the TFLOPS of cuBLAS (``torch.matmul``) and of
the tutorial's autotuned Triton kernel, each the median of ``triton.testing.do_bench`` (event-timed calls,
each after zeroing a 256 MB buffer that flushes L2; p20 / p80 were computed but not printed).  TFLOPS =
2 M N K / t, so t_ms = 2 M N K / (TFLOPS * 1e9).  The transcribed table is below (facts only); ``--page``
re-reads it from a local copy of the page and checks the transcription.

Writes ``triton_tutorial_a100.yaml`` (the Triton column: kernel-model rows, ``triton_tutorial/matmul.py``,
every config of the tutorial's CUDA autotune list, predicted as the fastest) and
``triton_tutorial_a100_eager.yaml`` (the cuBLAS column: eager-baseline rows, ``torch.matmul``) beside this
script, for the shapes in SHAPES.  The generated files are committed; nothing was fitted on them
(docs/fidelity.md: held out).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

from import_shared import HERE, _yaml

SOURCE = {"repository": "triton-lang/triton",
          "file": "main/_sources/getting-started/tutorials/03-matrix-multiplication.rst.txt (branch gh-pages)",
          "commit": "22f4a18254d1d7b05eb305a4b22c993f49ad8c4e",
          "method": "triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8]): the median of event-timed calls "
                    "(25 ms warm-up, 100 ms of repetitions), each after zeroing a 256 MB buffer (L2 flush); the page "
                    "prints the median as TFLOPS = 2 M N K / t, so measured_ms = 2 M N K / (TFLOPS * 1e9)"}

#: The tutorial's CUDA autotune list (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, num_stages,
#: num_warps), in its order: 8 configs, then 8 marked "good config for fp8 inputs"; the autotuner times all 16
#: for every (M, N, K) and keeps the fastest (a config that does not compile is skipped).
AUTOTUNE = ((128, 256, 64, 8, 3, 8), (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4),
            (64, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4), (64, 32, 32, 8, 5, 2), (32, 64, 32, 8, 5, 2),
            (128, 256, 128, 8, 3, 8), (256, 128, 128, 8, 3, 8), (256, 64, 128, 8, 4, 4), (64, 256, 128, 8, 4, 4),
            (128, 128, 128, 8, 4, 4), (128, 64, 64, 8, 4, 4), (64, 128, 64, 8, 4, 4), (128, 32, 64, 8, 4, 4))

#: The page's "matmul-performance-fp16" table: M (= N = K), cuBLAS TFLOPS, Triton TFLOPS.
FP16_TFLOPS = (
    (256, 4.096000, 4.096000), (384, 12.288000, 12.288000), (512, 26.214401, 26.214401),
    (640, 42.666665, 42.666665), (768, 63.195428, 68.056616), (896, 78.051553, 93.661869),
    (1024, 110.376426, 99.864382), (1152, 135.726544, 129.825388), (1280, 163.840004, 163.840004),
    (1408, 155.765024, 132.970149), (1536, 176.947204, 157.286398), (1664, 179.978245, 176.449258),
    (1792, 172.914215, 204.353162), (1920, 200.347822, 166.554219), (2048, 226.719125, 190.650180),
    (2176, 211.827867, 209.621326), (2304, 229.691080, 229.691080), (2432, 205.069087, 200.674737),
    (2560, 224.438347, 214.169933), (2688, 199.123658, 195.531224), (2816, 209.683695, 208.680416),
    (2944, 221.493479, 220.513412), (3072, 208.941345, 205.902197), (3200, 216.949149, 216.949149),
    (3328, 205.103410, 205.689424), (3456, 219.080343, 213.850319), (3584, 218.772251, 209.105570),
    (3712, 209.428397, 217.641271), (3840, 207.101127, 210.250955), (3968, 210.749463, 215.971570),
    (4096, 220.029067, 216.131602),
)

#: The shapes taken (the target shapes of triton_tutorial/matmul.yaml): spread over the range, with one size
#: (1152) that no 256-wide tile divides.
SHAPES = (512, 768, 1024, 1152, 1536, 2048, 2560, 3072, 3584, 4096)

HARDWARE = "a100-pcie"
GPU = ("The page does not name the GPU. The documentation workflow runs on an 'a100-runner-set' runner; the "
       "vector-add tutorial of the same build (same commit) peaks at 1,684 GB/s, above a 40 GB A100's 1,555 GB/s "
       "datasheet bandwidth, so an A100 80GB. SXM4 or PCIe is NOT stated. 1,684 GB/s is 87% of the 80GB PCIe's "
       "1,935 GB/s (the a100-pcie file predicts a streaming kernel at 88%, fitted on Liger-Kernel's A100 PCIe rows) "
       "and 83% of the SXM4's 2,039 GB/s; cuBLAS fp16 runs at 199-230 TFLOPS from M = 2048 up (64-74% of the 312 "
       "TFLOPS peak), consistent with a 300 W PCIe board. So a100-pcie, by inference only; the error on the a100 "
       "(SXM4) file is reported beside it (docs/fidelity.md).")
TIMER = ("Small sizes are quantised: the times are multiples of about 1.02 us (512: 10.24 us, 768: 13.3 us), the "
         "event timer's step, so those rows carry a few percent of rounding besides launch overhead.")


def check_page(path: Path) -> None:
    """Compare FP16_TFLOPS with the table of a local copy of the page (exit 1 on a difference)."""
    text = path.read_text()
    block = text.split("matmul-performance-fp16:", 1)[1].split("matmul-performance-fp8:", 1)[0]
    rows = [tuple(float(v) for v in m.groups()) for m in
            re.finditer(r"^\s*\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", block, re.M)]
    page = tuple((int(m), cublas, triton) for m, n, k, cublas, triton in rows if m == n == k)
    if [(m, round(c, 6), round(t, 6)) for m, c, t in page] != [(m, round(c, 6), round(t, 6)) for m, c, t in FP16_TFLOPS]:
        sys.exit(f"{path}: the fp16 table differs from FP16_TFLOPS; update the transcription.")
    print(f"{path}: the fp16 table matches FP16_TFLOPS ({len(page)} rows)")


def ms(m: int, tflops: float) -> float:
    return 2.0 * m ** 3 / (tflops * 1e9)


def build() -> tuple[dict, dict]:
    table = {m: (c, t) for m, c, t in FP16_TFLOPS}
    configs = [{"TILE": f"{bm}x{bn}x{bk}", "GROUP_SIZE_M": g, "num_warps": w, "num_stages": s}
               for bm, bn, bk, g, s, w in AUTOTUNE]
    kernel_rows, eager_rows = [], []
    for m in SHAPES:
        cublas, triton = table[m]
        shape = {"M": m, "N": m, "K": m}
        kernel_rows.append({"id": f"matmul/M=N=K={m}", "kind": "matmul", "measured_ms": ms(m, triton),
                            "note": f"{triton:g} TFLOPS; autotuned: the fastest of the tutorial's 16 configs",
                            "task": "triton_tutorial/matmul.yaml", "kernel": "triton_tutorial/matmul.py",
                            "shape": shape, "configs": configs})
        eager_rows.append({"id": f"matmul/M=N=K={m}", "kind": "matmul", "measured_ms": ms(m, cublas),
                           "note": f"{cublas:g} TFLOPS; torch.matmul of fp16 [M, K] @ [K, N] (cuBLAS)",
                           "reference": "def reference(a, b):\n    return torch.matmul(a, b)\n",
                           "inputs": {"a": {"shape": [m, m], "dtype": "float16"},
                                      "b": {"shape": [m, m], "dtype": "float16"}}})
    held = ("Held out: no rule constant or hardware figure was fitted on these rows (the a100-pcie figures were "
            "fitted on Liger-Kernel's rows, another benchmark on another machine).")
    notes = [GPU, TIMER, "Taken: the fp16 rows at M = N = K in " + ", ".join(map(str, SHAPES)) + " (10 of 31). "
             "Left out: the other 21 fp16 sizes (tracing every size with every config costs 16 traces a size) and "
             "the fp8 table (Triton only; fp8 inputs are not among the dataset format's dtypes, and the A100 has no "
             "fp8 tensor cores)."]
    kernels = {"dataset": "triton_tutorial_a100",
               "description": "Latencies of Triton's tutorial-03 fp16 matmul (autotuned over its 16 CUDA configs) "
                              "printed by Triton's documentation build on an A100 80GB runner, predicted by the "
                              "kernel model from triton_tutorial/matmul.py (the tutorial's published algorithm: "
                              "grouped program order, fp32 tl.dot K loop, fp16 output) as the fastest of the "
                              f"tutorial's configs. {held}",
               "predictor": "kernel", "hardware": HARDWARE, "timing": "do_bench", "source": SOURCE,
               "notes": notes, "rows": kernel_rows}
    eager = {"dataset": "triton_tutorial_a100_eager",
             "description": "Latencies of torch.matmul (cuBLAS) on fp16 square matrices from the same tutorial "
                            "page and run, predicted by the eager baseline. torch and CUDA versions not recorded. "
                            f"{held}",
             "predictor": "eager", "hardware": HARDWARE, "timing": "do_bench", "source": SOURCE,
             "notes": notes, "rows": eager_rows}
    return kernels, eager


def dump(data: dict) -> str:
    """YAML of *data*; the kernel rows share one config list, written once (anchor ``tutorial_configs``)."""
    text = _yaml(data)
    assert text.count("&id001") <= 1 and "&id002" not in text, "only the config list is shared"
    return text.replace("&id001", "&tutorial_configs").replace("*id001", "*tutorial_configs")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--page", type=Path, help="local copy of the tutorial page (.rst.txt) to check the table against")
    args = p.parse_args(argv)
    if args.page:
        check_page(args.page)
    for data in build():
        head = ("# Generated by experiments/fidelity/import_triton_tutorial.py from Triton's documentation build "
                "(facts only).\n# Format: docs/fidelity.md.  Do not edit by hand; rerun the script.\n")
        path = HERE / f"{data['dataset']}.yaml"
        path.write_text(head + dump(data))
        print(f"wrote {path}: {len(data['rows'])} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
