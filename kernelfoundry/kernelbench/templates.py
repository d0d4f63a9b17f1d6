"""Triton source templates of the seed generator: pointwise groups, reductions, scans, matmuls.

Each function returns the text of one ``@triton.jit`` kernel.  Every kernel takes its
tensors as pointers plus explicit strides (so broadcast and permuted views need no copy),
masks every access, accumulates in fp32 and casts to the output's element type on store.
"""

from __future__ import annotations


def _split(var: str, prefix: str, sizes: list[str], out: str) -> list[str]:
    """Lines decomposing the flat index *var* into coordinates ``{out}{d}`` over *sizes*.

    Every name is assigned once, and the innermost split reads ``{out}{last} = var % n`` and
    ``outer = var // n``: the form the built-in operators recognise (``tile_columns``)."""
    if not sizes:
        return []
    if len(sizes) == 1:
        return [f"    {out}0 = {var}"]
    lines, rest = [], var
    for d in range(len(sizes) - 1, 0, -1):
        outer = f"{out}0" if d == 1 else f"{prefix}r{d}"
        lines += [f"    {out}{d} = {rest} % {sizes[d]}", f"    {outer} = {rest} // {sizes[d]}"]
        rest = outer
    return lines


def pointwise_head(name: str, n_in: int, rank: int, out_params: list[str], n_const: int,
                   body: list[str]) -> list[str]:
    """The elementwise template up to its stores: signature (inputs with their strides, *out_params*,
    ``n``, the output's dims, constants, ``BLOCK``), the index split, the loads ``a{k}``, *body*."""
    params = []
    for k in range(n_in):
        params += [f"in{k}"] + [f"in{k}_s{d}" for d in range(rank)]
    params += out_params + ["n"] + [f"d{d}" for d in range(rank)]
    params += [f"c{j}" for j in range(n_const)] + ["BLOCK: tl.constexpr"]
    lines = ["@triton.jit", f"def {name}({', '.join(params)}):",
             "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
             "    mask = offs < n"]
    lines += _split("offs", "", [f"d{d}" for d in range(rank)], "i")
    for k in range(n_in):
        addr = " + ".join(f"i{d} * in{k}_s{d}" for d in range(rank)) or "offs * 0"
        lines.append(f"    a{k} = tl.load(in{k} + {addr}, mask=mask, other=0)")
    return lines + [f"    {line}" for line in body]


def pointwise(name: str, n_in: int, rank: int, n_out: int, n_const: int, body: list[str],
              outs: list[str]) -> str:
    """A flat elementwise kernel over a rank-*rank* output; input k is read through its strides."""
    lines = pointwise_head(name, n_in, rank, [f"out{k}" for k in range(n_out)], n_const, body)
    for k, value in enumerate(outs):
        lines.append(f"    tl.store(out{k} + offs, ({value}).to(out{k}.dtype.element_ty), mask=mask)")
    return "\n".join(lines) + "\n"


NEUTRAL = {"sum": "0.0", "mean": "0.0", "var": "0.0", "prod": "1.0", "amax": "float('-inf')",
           "amin": "float('inf')", "argmax": "float('-inf')", "argmin": "float('inf')"}


def reduction(name: str, kind: str, n_in: int, n_kept: int, n_red: int, prologue: tuple[str, ...],
              value: str, correction: float = 0.0, epilogue: tuple[str, ...] = (), n_const: int = 0) -> str:
    """One program per output element; loops over the reduced elements in BLOCK_R chunks.

    Input k (``in{k}``, strides of the kept then the reduced dims) loads as ``a{k}``; the
    *prologue* lines compute the reduced *value* from them (fused pointwise ops); the
    *epilogue* lines transform the result ``res`` before the store."""
    params = []
    for k in range(n_in):
        params += [f"in{k}"] + [f"in{k}_k{d}" for d in range(n_kept)] + [f"in{k}_r{d}" for d in range(n_red)]
    params += ["out", "n_red"] + [f"kd{d}" for d in range(n_kept)] + [f"rd{d}" for d in range(n_red)]
    params += [f"c{j}" for j in range(n_const)] + ["BLOCK_R: tl.constexpr"]
    lines = ["@triton.jit", f"def {name}({', '.join(params)}):", "    pid = tl.program_id(0)"]
    lines += _split("pid", "p", [f"kd{d}" for d in range(n_kept)], "j")
    for k in range(n_in):
        lines.append(f"    base{k} = {' + '.join(f'j{d} * in{k}_k{d}' for d in range(n_kept)) or '0'}")
    lines.append("    cols = tl.arange(0, BLOCK_R)")

    def loop(body: list[str]) -> list[str]:
        out = ["    for start in range(0, n_red, BLOCK_R):", "        idx = start + cols",
               "        m = idx < n_red"]
        out += ["    " + line for line in _split("idx", "q", [f"rd{d}" for d in range(n_red)], "i")]
        for k in range(n_in):
            addr = " + ".join(f"i{d} * in{k}_r{d}" for d in range(n_red)) or "idx * 0"
            out.append(f"        a{k} = tl.load(in{k} + base{k} + {addr}, mask=m, other=0)")
        out += [f"        {line}" for line in prologue]
        out.append(f"        v = tl.where(m, ({value}).to(tl.float32), {NEUTRAL[kind]})")
        return out + [f"        {line}" for line in body]

    if kind in ("sum", "mean", "var"):
        lines.append("    acc = tl.zeros([BLOCK_R], dtype=tl.float32)")
        lines += loop(["acc += v"])
        lines.append("    res = tl.sum(acc, axis=0)")
        if kind == "mean":
            lines.append("    res = res / n_red")
        if kind == "var":
            lines += ["    mean = res / n_red", "    acc = tl.zeros([BLOCK_R], dtype=tl.float32)"]
            lines += loop(["dv = tl.where(m, v - mean, 0.0)", "acc += dv * dv"])
            lines.append(f"    res = tl.sum(acc, axis=0) / (n_red - {correction!r})")
    elif kind == "prod":
        lines.append("    acc = tl.full([BLOCK_R], 1.0, dtype=tl.float32)")
        lines += loop(["acc = acc * v"])
        lines.append("    res = tl.reduce(acc, 0, _mul)")
    elif kind in ("amax", "amin"):
        op = "maximum" if kind == "amax" else "minimum"
        lines.append(f"    acc = tl.full([BLOCK_R], {NEUTRAL[kind]}, dtype=tl.float32)")
        lines += loop([f"acc = tl.{op}(acc, v)"])
        lines.append(f"    res = tl.{'max' if kind == 'amax' else 'min'}(acc, axis=0)")
    else:                                                   # argmax / argmin: first index of the extreme
        cmp, red = (">", "max") if kind == "argmax" else ("<", "min")
        lines += [f"    best = tl.full([BLOCK_R], {NEUTRAL[kind]}, dtype=tl.float32)",
                  "    pos = tl.zeros([BLOCK_R], dtype=tl.int64)"]
        lines += loop([f"better = (v {cmp} best) & m", "best = tl.where(better, v, best)",
                       "pos = tl.where(better, idx.to(tl.int64), pos)"])
        lines += [f"    top = tl.{red}(best, axis=0)",
                  "    res = tl.min(tl.where(best == top, pos, n_red), axis=0)"]
    lines += [f"    {line}" for line in epilogue]
    lines.append("    tl.store(out + pid, res.to(out.dtype.element_ty))")
    return "\n".join(lines) + "\n"


MUL_COMBINE = "@triton.jit\ndef _mul(a, b):\n    return a * b\n"


def scan(name: str, kind: str, n_rows_dims: int) -> str:
    """Inclusive cumsum/cumprod along the last dim of a permuted view; a row per program."""
    params = ["x"] + [f"xk{d}" for d in range(n_rows_dims)] + ["xs", "y"] + [f"yk{d}" for d in range(n_rows_dims)]
    params += ["ys", "length"] + [f"kd{d}" for d in range(n_rows_dims)] + ["BLOCK_L: tl.constexpr"]
    op = "tl.cumsum" if kind == "cumsum" else "tl.cumprod"
    lines = ["@triton.jit", f"def {name}({', '.join(params)}):", "    pid = tl.program_id(0)"]
    lines += _split("pid", "p", [f"kd{d}" for d in range(n_rows_dims)], "j")
    lines += [f"    xb = {' + '.join(f'j{d} * xk{d}' for d in range(n_rows_dims)) or '0'}",
              f"    yb = {' + '.join(f'j{d} * yk{d}' for d in range(n_rows_dims)) or '0'}",
              "    cols = tl.arange(0, BLOCK_L)",
              f"    carry = {'0.0' if kind == 'cumsum' else '1.0'}",
              "    for start in range(0, length, BLOCK_L):",
              "        idx = start + cols",
              "        m = idx < length",
              f"        v = tl.load(x + xb + idx * xs, mask=m, other={'0.0' if kind == 'cumsum' else '1.0'})"
              ".to(tl.float32)",
              f"        c = {op}(v, axis=0) {'+' if kind == 'cumsum' else '*'} carry",
              "        tl.store(y + yb + idx * ys, c.to(y.dtype.element_ty), mask=m)",
              "        carry = tl.sum(tl.where(cols == BLOCK_L - 1, c, 0.0), axis=0)"]
    return "\n".join(lines) + "\n"


def matmul(name: str, fp32: bool) -> str:
    """C[b] = A[b] @ B[b] by BLOCK_M x BLOCK_N tiles, K in BLOCK_K steps (fp32 accumulation); fp32
    operands multiply in full fp32 (``input_precision="ieee"``, as PyTorch's default matmul)."""
    return f"""@triton.jit
def {name}(a, b, c, M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_b = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        av = tl.load(a + pid_b * sab + rm[:, None] * sam + kk[None, :] * sak,
                     mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        bv = tl.load(b + pid_b * sbb + kk[:, None] * sbk + rn[None, :] * sbn,
                     mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(av, bv{{PRECISION}})
    tl.store(c + pid_b * scb + rm[:, None] * scm + rn[None, :] * scn, acc.to(c.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))
""".replace("{PRECISION}", ', input_precision="ieee"' if fp32 else "")
