"""Triton source template of the seed generator's convolutions (see :mod:`.seed_conv`).

One kernel text covers 1D/2D/3D, plain and transposed convolutions, groups and bias: an
implicit GEMM whose program computes a ``BLOCK_M`` (output channels of one group) x
``BLOCK_N`` (output positions of one sample) tile, reducing over ``K = in_channels/groups x
kernel window`` in ``BLOCK_K`` steps with ``tl.dot`` (fp32 accumulation).  The weight tile is
the dot's left operand, the gathered input patch (im2col on the fly, every access masked)
its right one.  The output is stored as rows ``(n, c_out)`` of ``P`` contiguous positions:
``out + rm[:, None] * so + rn[None, :]``, the form the ``fuse_epilogue`` operator re-tiles.
"""

from __future__ import annotations

from .templates import _split


def conv(name: str, nsp: int, transposed: bool, has_bias: bool, precision: str, cast: bool,
         values: tuple[int | None, ...]) -> str:
    """The kernel text of a rank-``nsp`` (1-3) convolution.

    Parameters: the input ``x`` and weight ``w`` with all their strides, the bias ``b`` and
    its stride (*has_bias*), the output ``out`` and its row stride ``so`` (between (n, c_out)
    rows), ``C_out`` (all output channels), ``Cig``/``Cog`` (input/output channels per group),
    ``G`` (groups), ``P`` (output positions per row), ``K`` (the reduction length), the
    output/input/kernel sizes ``od{d}``/``id{d}``/``kd{d}`` and the stride, padding and
    dilation ``S{d}``/``PD{d}``/``D{d}``, each a ``tl.constexpr`` where *values* (3 per spatial
    dim, in that order) holds the graph's constant, a runtime argument where it holds None.  *precision* is the dot's extra argument text
    (``', input_precision="ieee"'`` for fp32 operands, or ``''``); with *cast* the loaded
    operands are cast to fp32 first (bf16 or mixed operands).  Constant strides and dilations of
    1 and paddings of 0 leave their arithmetic (and, for a plain convolution without padding,
    the bounds checks: its windows stay inside the input) out of the text.

    A transposed convolution gathers: output position ``o`` reads input position
    ``i = (o + PD - t * D) / S`` of tap ``t`` when the division is exact and ``i`` in range
    (no atomics, every output element written once)."""
    rank = nsp + 2
    params = ["x"] + [f"xs{d}" for d in range(rank)] + ["w"] + [f"ws{d}" for d in range(rank)]
    if has_bias:
        params += ["b", "bs0"]
    params += ["out", "so", "C_out", "Cig", "Cog", "G", "P", "K"]
    params += [f"od{d}" for d in range(nsp)] + [f"id{d}" for d in range(nsp)] + [f"kd{d}" for d in range(nsp)]
    for d in range(nsp):
        for j, what in enumerate(("S", "PD", "D")):
            params.append(f"{what}{d}: tl.constexpr" if values[3 * d + j] is not None else f"{what}{d}")
    params += ["BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr"]
    # the weight's output-channel and input-channel strides ([C_out, Cig, k...] or, transposed,
    # [C_in, Cog, k...]) and the group's first row
    w_oc, w_ic = ("ws1", "ws0") if transposed else ("ws0", "ws1")
    w_first = "g * Cig" if transposed else "g * Cog"
    to32 = ".to(tl.float32)" if cast else ""

    def times(a: str, what: str, d: int) -> str:        # a * S{d} / a * D{d}, a when the constant is 1
        return a if values[3 * d + (0 if what == "S" else 2)] == 1 else f"{a} * {what}{d}"

    lines = ["@triton.jit", f"def {name}({', '.join(params)}):",
             "    pid_n = tl.program_id(0)",
             "    pid_m = tl.program_id(1)",
             "    pid_z = tl.program_id(2)",
             "    g = pid_z % G",
             "    nb = pid_z // G",
             "    oc = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
             "    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
             "    rk = tl.arange(0, BLOCK_K)",
             "    m_ok = oc < Cog",
             "    n_ok = rn < P"]
    lines += _split("rn", "p", [f"od{d}" for d in range(nsp)], "o")
    # index arithmetic in int64 from here: no overflow on large tensors (and Triton's interpreter
    # checks every int32 add/mul for overflow, which makes it several times slower)
    for d in range(nsp):
        first = times(f"o{d}", "S", d) if not transposed else f"o{d}"
        if values[3 * d + 1] != 0:
            first += f" {'+' if transposed else '-'} PD{d}"
        lines.append(f"    ib{d} = ({first}).to(tl.int64)")
    # the input address splits into a position part and a reduction part unless a transposed
    # convolution divides by a stride
    separable = not transposed or all(values[3 * d] == 1 for d in range(nsp))
    if separable:
        lines.append(f"    xn = {' + '.join(f'ib{d} * xs{d + 2}' for d in range(nsp))}")
    lines += ["    x_row = x + nb.to(tl.int64) * xs0 + (g * Cig).to(tl.int64) * xs1",
              f"    w_row = w + ({w_first}).to(tl.int64) * ws0",
              f"    wm = oc.to(tl.int64) * {w_oc}",
              "    mn_ok = m_ok[:, None] & n_ok[None, :]",
              "    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)",
              "    for k0 in range(0, K, BLOCK_K):",
              "        kk = k0 + rk",
              "        k_ok = kk < K"]
    # kk -> (ci, t0, ..., t{nsp-1}): the weight's own (row-major) order of its reduced dims
    lines += ["    " + line for line in _split("kk", "q", ["Cig"] + [f"kd{d}" for d in range(nsp)], "u")]
    lines += ["        ci = u0.to(tl.int64)"] + [f"        t{d} = u{d + 1}.to(tl.int64)" for d in range(nsp)]
    wk = " + ".join([f"ci * {w_ic}"] + [f"t{d} * ws{d + 2}" for d in range(nsp)])
    lines += [f"        wk = {wk}",
              "        wv = tl.load(w_row + wm[:, None] + wk[None, :], mask=m_ok[:, None] & k_ok[None, :], "
              f"other=0.0){to32}"]
    oks = ["k_ok[:, None] & n_ok[None, :]"]
    for d in range(nsp):
        lines.append(f"        td{d} = {times(f't{d}', 'D', d)}")
        if not transposed:
            if values[3 * d + 1] != 0:    # without padding every tap of an output position is inside
                lines += [f"        i{d} = ib{d}[None, :] + td{d}[:, None]",
                          f"        ok{d} = (i{d} >= 0) & (i{d} < id{d})"]
                oks.append(f"ok{d}")
        elif values[3 * d] == 1:          # stride 1: every tap maps onto an input position
            lines += [f"        i{d} = ib{d}[None, :] - td{d}[:, None]",
                      f"        ok{d} = (i{d} >= 0) & (i{d} < id{d})"]
            oks.append(f"ok{d}")
        else:                             # input (o + PD - t * D) / S where that division is exact
            lines += [f"        e{d} = ib{d}[None, :] - td{d}[:, None]",
                      f"        f{d} = tl.where(e{d} >= 0, e{d}, 0)",
                      f"        i{d} = f{d} // S{d}",
                      f"        ok{d} = (e{d} >= 0) & (f{d} % S{d} == 0) & (i{d} < id{d})"]
            oks.append(f"ok{d}")
    if not separable:
        x_addr = " + ".join(["(ci * xs1)[:, None]"] + [f"i{d} * xs{d + 2}" for d in range(nsp)])
    else:
        sign = " - " if transposed else " + "
        lines.append(f"        xk = ci * xs1{''.join(f'{sign}td{d} * xs{d + 2}' for d in range(nsp))}")
        x_addr = "xk[:, None] + xn[None, :]"
    lines += [f"        xv = tl.load(x_row + {x_addr}, mask={' & '.join(oks)}, other=0.0){to32}",
              f"        acc += tl.dot(wv, xv{precision})"]
    if has_bias:
        lines.append("    acc += tl.load(b + (g * Cog + oc) * bs0, mask=m_ok, other=0.0).to(tl.float32)[:, None]")
    lines += ["    rm = nb.to(tl.int64) * C_out + g * Cog + oc",
              "    tl.store(out + rm[:, None] * so + rn[None, :], acc, mask=mn_ok)"]   # cast to out's type on store
    return "\n".join(lines) + "\n"
