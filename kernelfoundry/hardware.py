"""``python -m kernelfoundry.hardware [NAME ...] [--json] [--hardware-dir DIR]``: list the hardware library.

Without names: one line per target with its headline figures.  With names (or paths
of hardware .yaml files): every field of each, validated.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .errors import UserError
from .perfmodel import HARDWARE_DIR, HARDWARE_DIR_ENV, list_hardware, load_hardware


def _table() -> list[str]:
    rows = [("name", "kind", "cores", "fp16 TFLOPS", "fp32 TFLOPS", "DRAM TB/s", "L2 MiB", "on-chip per core")]
    for name in list_hardware():
        s = load_hardware(name)
        chip = (f"UB {s.npu['ub_bytes'] // 1024} KiB, L1 {s.npu['l1_bytes'] // 1024} KiB" if s.is_npu
                else f"{s.smem_bytes_per_core // 1024} KB smem")
        cores = f"{s.cores}+{s.vector_cores}v" if s.is_npu else str(s.cores)
        rows.append((s.name, s.kind, cores, f"{s.matrix_tflops.get('fp16', 0):g}", f"{s.vector_tflops['fp32']:g}",
                     f"{s.dram_tbps:g}", f"{s.l2_bytes / 2**20:.0f}", chip))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelfoundry.hardware",
                                     description=f"List the hardware library ({HARDWARE_DIR}) and your own "
                                                 f"hardware directories (${HARDWARE_DIR_ENV}, --hardware-dir).")
    parser.add_argument("names", nargs="*", help="hardware names or .yaml paths to show in full")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--hardware-dir", action="append", default=[], type=Path, metavar="DIR",
                        help=f"a directory of your own hardware .yaml files, searched before the library "
                             f"(repeatable; adds to ${HARDWARE_DIR_ENV}, which every command reads)")
    args = parser.parse_args(argv)
    if args.hardware_dir:
        old = os.environ.get(HARDWARE_DIR_ENV, "")
        os.environ[HARDWARE_DIR_ENV] = os.pathsep.join([str(d.expanduser().resolve()) for d in args.hardware_dir]
                                                       + ([old] if old else []))
    try:
        if not args.names:
            if args.json:
                print(json.dumps({n: load_hardware(n).to_dict() for n in list_hardware()}, indent=1))
            else:
                print("\n".join(_table()))
            return 0
        specs = [load_hardware(n) for n in args.names]
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        print(json.dumps({s.name: s.to_dict() for s in specs}, indent=1))
        return 0
    for s in specs:
        print(f"{s.name}: {s.summary()}")
        for key, value in s.to_dict().items():
            if key not in ("name", "description") and value not in ({}, None):
                print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
