"""Fit the eager rules' free constants to a dataset (the numbers the rule modules quote as fitted).

    python -m kernelfoundry.fidelity.calibrate experiments/fidelity/kernelbench_h100.yaml

Coordinate descent on the weighted mean squared log error of the rows of each constant's op
kinds, one group of constants at a time, from the values in the code.  Prints each group's
fitted values and the error before and after.  The code is not changed: copy a value into its
rule module (with what it was fitted on) only when the fit is better for a whole family.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from ..perfmodel import TIMINGS, eager_estimate, load_hardware, profile_function, rules_conv
from .dataset import load_dataset

#: (module, constant, index in a tuple or None, lower, upper), the op kinds it prices.
GROUPS = {
    "conv on tensor cores": ((rules_conv, "CONV_TC"), ("conv",)),
    "transposed conv on tensor cores": ((rules_conv, "CONV_T_TC"), ("conv-transposed",)),
    "convs on CUDA cores": ((rules_conv, "CONV_FFMA"), ("conv", "conv-transposed")),
    "window kernels": ((rules_conv, "WINDOW_LANES_PER_TAP"), ("pooling", "conv-depthwise")),
}


def loss(rows, spec, timing) -> float:
    errs, weights = [], []
    for r in rows:
        est = eager_estimate(profile_function(r.reference, list(r.inputs), name=r.id), spec, timing)
        errs.append(math.log(est.seconds * 1e3 / r.measured_ms) ** 2)
        weights.append(r.weight)
    return float(np.average(errs, weights=weights))


def fit(module, name: str, rows, spec, timing, sweeps: int = 4) -> tuple[object, float, float]:
    """Coordinate descent over the constant's components (multiplicative steps)."""
    value = getattr(module, name)
    vec = list(value) if isinstance(value, tuple) else [value]

    def set_(v):
        setattr(module, name, tuple(v) if isinstance(value, tuple) else v[0])

    before = loss(rows, spec, timing)
    best = before
    for _ in range(sweeps):
        for i in range(len(vec)):
            for step in (0.5, 0.7, 0.85, 0.93, 1.07, 1.18, 1.4, 2.0):
                trial = list(vec)
                trial[i] = vec[i] * step
                set_(trial)
                err = loss(rows, spec, timing)
                if err < best - 1e-9:
                    best, vec = err, trial
            set_(vec)
    set_(vec)
    fitted = tuple(round(v, 3) for v in vec) if isinstance(value, tuple) else round(vec[0], 3)
    setattr(module, name, value)
    return fitted, before, best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelfoundry.fidelity.calibrate", description=__doc__.splitlines()[0])
    p.add_argument("dataset", help="an eager dataset (e.g. experiments/fidelity/kernelbench_h100.yaml)")
    p.add_argument("--sweeps", type=int, default=4)
    args = p.parse_args(argv)
    ds = load_dataset(args.dataset)
    spec, timing = load_hardware(ds.hardware), TIMINGS[ds.timing]
    for title, ((module, name), kinds) in GROUPS.items():
        rows = [r for r in ds.rows if r.kind in kinds]
        if not rows:
            continue
        fitted, before, after = fit(module, name, rows, spec, timing, args.sweeps)
        print(f"{title}: {name} = {fitted}  (code: {getattr(module, name)}); rms log error over {len(rows)} rows "
              f"{math.sqrt(before):.3f} -> {math.sqrt(after):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
