"""Write a held-out Liger fidelity dataset pair from a local copy of a Liger-Kernel benchmark CSV.

    python experiments/fidelity/import_liger_csv.py CSV [--gpu h100-nvl]

CSV is a local copy of ``benchmark/data/h100_all_benchmark_data.csv`` of linkedin/Liger-Kernel at
commit ``3534d4461ca89319e29c890c1a4c20cb2a615d5f`` (71,467 bytes, 315 rows; it is not kept in this
repository).  Columns: kernel_name, kernel_provider, kernel_operation_mode, metric_name,
metric_unit, x_name, x_label, x_value, y_value_50 / y_value_20 / y_value_80 (median / 20th / 80th
percentile), extra_benchmark_config_str (JSON), gpu_name, timestamp, liger_version.

Takes the forward-mode ``speed`` rows (ms) of the kernels this folder's Liger-style kernels
express (rms_norm, layer_norm, rope, cross_entropy), with the same conventions as
``import_shared.py`` writes ``liger_a100.yaml`` / ``liger_a100_eager.yaml``: the ``liger`` rows
become kernel-model rows (task, kernel, shape, the num_warps Liger's launch rules give), the
``huggingface`` rows eager-baseline rows (reference, inputs).  ``torchcompile`` rows (Inductor's
kernels, of unknown structure), backward / full rows and memory rows are left out, and so are
kernels without forward rows (geglu, swiglu): the script prints what it skipped.

Writes ``liger_<tag>.yaml`` and ``liger_<tag>_eager.yaml`` beside this script (tag: the hardware
name without '-', e.g. ``liger_h100nvl``).  The generated files are committed; nothing was fitted
on them (docs/fidelity.md: held out).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from pathlib import Path

import triton

from import_shared import HERE, HF_REFERENCE, LIGER_KIND, _hf_inputs, _yaml

#: Per GPU the CSV was measured on: the hardware library entry, the CSV's gpu_name, where the file
#: is and what the card is (datasheet figures; see hardware/<name>.yaml).
GPUS = {
    "h100-nvl": {"gpu_name": "NVIDIA H100 NVL", "file": "benchmark/data/h100_all_benchmark_data.csv",
                 "commit": "3534d4461ca89319e29c890c1a4c20cb2a615d5f",
                 "card": "an H100 NVL 94GB (PCIe card, 132 SMs, HBM3 at 3.9 TB/s, 350-400 W)"},
}
#: What the huggingface provider runs per kernel (eager PyTorch, our description of the benchmark's modules).
HF_IMPL = {
    "rms_norm": "Eager PyTorch Llama-style RMSNorm module (defined in the benchmark script): aten _to_copy (bf16->fp32), "
                "pow, mean over the last dim, add eps, rsqrt, mul, _to_copy (fp32->bf16), mul by the fp32 weight: 8 "
                "kernels, each a full pass (except the [M,1] ones), output fp32.",
    "layer_norm": "torch.nn.LayerNorm(N, eps=1e-6), eager: a single ATen native_layer_norm CUDA kernel (which also "
                  "returns mean/rstd for autograd).",
    "rope": "transformers apply_rotary_pos_emb, eager: unsqueeze cos/sin, then for each of q and k: mul by cos, two "
            "slices (views), neg, cat, mul by sin, add: 5 kernels per tensor, 10 in total, each writing a full-size "
            "temporary; outputs keep the [1, T, heads, hd] memory layout of the inputs.",
    "cross_entropy": "torch.nn.CrossEntropyLoss() eager: aten _log_softmax (reads the logits and writes a full BT x V "
                     "fp32 log-probability tensor) then nll_loss_forward (gathers BT values and averages): 2 kernels "
                     "from the model code.",
}
#: The benchmark configs the Liger-style tasks were written for (liger/*.yaml target shapes).
EXPECTED_CONFIG = {
    "rms_norm": {"M": 2048, "dtype": "torch.bfloat16", "eps": 1e-06},
    "layer_norm": {"M": 4096, "dtype": "torch.float32", "eps": 1e-06},
    "rope": {"dtype": "torch.bfloat16", "num_q_heads": 32, "num_kv_heads": 8},
    "cross_entropy": {"B": 8, "T": 2048},
}
PROVIDERS = {"liger": "kernel", "huggingface": "eager"}


def _row_warps(block: int) -> int:
    """num_warps of Liger 0.5.2's row-per-program kernels from the row block (4 / 8 / 16 / 32 below
    2048 / below 8192 / below 32768 / from 32768)."""
    return 4 if block < 2048 else 8 if block < 8192 else 16 if block < 32768 else 32


def shape_and_launch(name: str, x_name: str, x: int, cfg: dict) -> tuple[dict, int, int]:
    """(our task's shape, Liger's grid size, Liger's num_warps) of one CSV row."""
    if name == "rms_norm":
        return {"M": cfg["M"], "H": x}, cfg["M"], _row_warps(triton.next_power_of_2(x))
    if name == "layer_norm":
        return {"M": cfg["M"], "N": x}, cfg["M"], _row_warps(triton.next_power_of_2(x))
    if name == "cross_entropy":
        bt = cfg["B"] * cfg["T"]
        return {"BT": bt, "V": x}, bt, 32                       # fixed 32 warps, one program per row
    T, H = (cfg["seq_len"], x) if x_name == "H" else (x, cfg["hidden_size"])
    shape = {"B": 1, "T": T, "HQ": cfg["num_q_heads"], "HK": cfg["num_kv_heads"], "D": H // cfg["num_q_heads"]}
    return shape, T, 4                                          # one program per token, Triton's default warps


def _left_out(r: dict) -> str:
    """Why a CSV row is not taken ("" when it is)."""
    if r["kernel_name"] not in LIGER_KIND:
        return f"{r['kernel_name']}: no Liger-style kernel or task here"
    if r["kernel_operation_mode"] != "forward" or r["metric_name"] != "speed":
        return f"{r['kernel_operation_mode']} {r['metric_name']} rows"
    if r["kernel_provider"] not in PROVIDERS:
        return f"{r['kernel_provider']} rows (kernels of unknown structure)"
    return ""


def read_rows(csv_path: Path, gpu_name: str) -> tuple[list[dict], Counter]:
    """The forward speed rows of the modelled kernels and providers; a count of what was left out, by reason."""
    taken, skipped = [], Counter()
    with csv_path.open(newline="") as fh:
        for r in csv.DictReader(fh):
            if r["gpu_name"] != gpu_name:
                raise SystemExit(f"{csv_path}: a row of {r['gpu_name']!r}, expected {gpu_name!r}")
            reason = _left_out(r)
            if reason:
                skipped[reason] += 1
                continue
            if r["metric_unit"] != "ms":
                raise SystemExit(f"{csv_path}: speed row in {r['metric_unit']!r}, expected ms")
            cfg = json.loads(r["extra_benchmark_config_str"])
            want = EXPECTED_CONFIG[r["kernel_name"]]
            if any(cfg.get(k) != v for k, v in want.items()):
                raise SystemExit(f"{csv_path}: {r['kernel_name']} config {cfg} differs from the one the "
                                 f"liger/ tasks were written for ({want})")
            taken.append({**r, "config": cfg})
    return taken, skipped


def build(csv_path: Path, hardware: str) -> tuple[dict, dict, Counter]:
    gpu = GPUS[hardware]
    rows, skipped = read_rows(csv_path, gpu["gpu_name"])
    kernel_rows, eager_rows = [], []
    for r in rows:
        name, x_name, x = r["kernel_name"], r["x_name"], int(r["x_value"])
        shape, grid, warps = shape_and_launch(name, x_name, x, r["config"])
        common = {"id": f"{name}/{x_name}={x}", "kind": LIGER_KIND[name], "measured_ms": float(r["y_value_50"]),
                  "spread_ms": [float(r["y_value_20"]), float(r["y_value_80"])]}
        if r["kernel_provider"] == "liger":
            config = {"num_warps": warps, "num_stages": 1}
            if name == "cross_entropy":
                config = {"BLOCK_R": 1024, **config}
            kernel_rows.append({**common, "task": f"liger/{name}.yaml", "kernel": f"liger/{name}.py",
                                "shape": shape, "config": config,
                                "note": f"Liger [{grid}] grid, num_warps by Liger's rule"})
        else:
            eager_rows.append({**common, "note": HF_IMPL[name], "reference": HF_REFERENCE[name],
                               "inputs": _hf_inputs(name, shape)})
    versions = sorted({r["liger_version"] for r in rows})
    days = sorted({r["timestamp"][:10] for r in rows})
    source = {"repository": "linkedin/Liger-Kernel", "file": gpu["file"], "commit": gpu["commit"],
              "method": "triton.testing.do_bench: median of event-timed calls, each after zeroing a 256 MB "
                        "buffer; spread_ms is [p20, p80]"}
    tag = hardware.replace("-", "")
    held = (f"Held out: no rule constant or hardware figure was fitted on these rows (the {hardware} figures are "
            f"datasheet values or carried over from other GPUs).")
    run = f"Liger-Kernel {', '.join(versions)}, measured {', '.join(days)}"
    kernels = {"dataset": f"liger_{tag}",
               "description": f"Forward latencies of the Triton kernels of {run} on {gpu['card']}, predicted by "
                              "the kernel model from this folder's kernels that follow Liger's published algorithms "
                              f"(grid, block size and num_warps rules, passes, dtypes), at Liger's configs. {held}",
               "predictor": "kernel", "hardware": hardware, "timing": "do_bench", "source": source,
               "rows": kernel_rows}
    eager = {"dataset": f"liger_{tag}_eager",
             "description": f"Forward latencies of the eager PyTorch (HuggingFace) modules of the same benchmark "
                           f"({run}) on {gpu['card']}, predicted by the eager baseline (rules calibrated on the "
                           f"H100 SXM). torch version not recorded. {held}",
             "predictor": "eager", "hardware": hardware, "timing": "do_bench", "source": source,
             "rows": eager_rows}
    return kernels, eager, skipped


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv", type=Path, help="local copy of the Liger-Kernel benchmark CSV")
    p.add_argument("--gpu", default="h100-nvl", choices=sorted(GPUS), help="hardware the CSV was measured on")
    args = p.parse_args(argv)
    kernels, eager, skipped = build(args.csv, args.gpu)
    for data in (kernels, eager):
        head = (f"# Generated by experiments/fidelity/import_liger_csv.py from {data['source']['repository']} "
                f"measurements (facts only).\n# Format: docs/fidelity.md.  Do not edit by hand; rerun the script.\n")
        path = HERE / f"{data['dataset']}.yaml"
        path.write_text(head + _yaml(data))
        per = Counter(r["id"].split("/")[0] for r in data["rows"])
        print(f"wrote {path}: {len(data['rows'])} rows ({', '.join(f'{k} {v}' for k, v in per.items())})")
    print("left out: " + "; ".join(f"{why}: {n}" for why, n in sorted(skipped.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
