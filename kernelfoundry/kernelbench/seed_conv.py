"""Seed lowering of ``aten.convolution``: 1D/2D/3D, plain and transposed, any stride, padding,
dilation, output padding and groups (depthwise included), with or without bias.

Both kinds become one implicit-GEMM kernel (:func:`.templates_conv.conv`): a program per
``BLOCK_M`` output channels (of one group) x ``BLOCK_N`` output positions (of one sample),
``tl.dot`` over ``K = in_channels / groups x kernel window`` in ``BLOCK_K`` steps, fp32
accumulation (fp32 operands multiply in full fp32, ``input_precision="ieee"``, like the
matmul template), the bias added before the store, every load and the store masked.

Transposed convolutions are a *gather* over output positions, not a scatter of input
positions: output position ``o`` of tap ``t`` reads input ``i = (o + padding - t * dilation)
/ stride`` when the division is exact and ``i`` is inside the input.  Each output element is
then computed by exactly one program and written once, so there are no write races, no
atomics (whose order would make the fp32 sums nondeterministic) and no zero-filled output
to allocate first (the verifier poisons ``torch.empty`` outputs, and a ``zeros`` fill is one
more pass the model charges); the price is taps that do not divide (``1 - 1/stride`` of
them per dim) being masked off inside the reduction, which the mutator can later remove.

Sizes: the weight's shape gives the kernel window and channel counts at run time; strides,
paddings and dilations are the graph's constants (``tl.constexpr``) or size expressions;
output sizes are PyTorch's formulas over the input's shape in ``launch``.  An output size
that changes between the two traces becomes a size symbol of the generator (``S_0c<node>_<d>``,
defined in ``launch`` by its formula), so the ops after the convolution (a view to
``(N, groups, C/groups, H*W)``, a mean's divisor ``H * W``, the epilogue's own buffer)
express their sizes through it even where a strided convolution's size is no product of
the input's sizes.  The output is stored as rows ``(n, c_out)`` of contiguous positions,
the layout the ``fuse_epilogue`` operator recognises.
"""

from __future__ import annotations

import math
from typing import Any

from .templates_conv import conv
from .noseed import NoSeed


def _pow2(n: int, lo: int, hi: int) -> int:
    p = lo
    while p < n and p < hi:
        p *= 2
    return p


def _own_cog(gen, i: int, transposed: bool) -> float:
    """Output channels per group of convolution *i* at the problem's own sizes (inf when unknown): the
    weight holds them (transposed), or the groups follow from the input's channels over the weight's."""
    w = gen.at_target(gen.g[i]["args"][1]["ref"], [0, 1])
    if w is None or min(w) < 1:
        return math.inf
    if transposed:
        return w[1]
    x = gen.at_target(gen.g[i]["args"][0]["ref"], [1])
    if x is None or x[0] % w[1]:
        return math.inf
    return w[0] / (x[0] // w[1])


def _blocks(gen, i: int, transposed: bool, groups: Any, nsp: int) -> dict[str, list[int]]:
    """Tile sizes fitted to the traced convolution: BLOCK_M to the output channels per group,
    BLOCK_K to the reduction (16..64 each), BLOCK_N so the accumulator holds up to 8K elements.
    (Few large programs also keep the check shapes fast under Triton's interpreter.)"""
    ws = gen.g[gen.g[i]["args"][1]["ref"]]["shape"]           # the weight's traced shape
    g = groups if isinstance(groups, int) and groups > 0 else 1
    cog = ws[1] if transposed else ws[0] // g
    k = (ws[0] // g if transposed else ws[1])
    for n in ws[2:2 + nsp]:
        k *= n
    bm, bk = _pow2(cog, 16, 64), _pow2(k, 16, 64)
    bn = min(256, 8192 // bm)
    # a second BLOCK_M no group fills at the problem's own sizes (a depthwise conv: one channel per
    # group) would only mask rows: not offered
    wide = 32 if bm != 32 else 64
    ms = [bm] if _own_cog(gen, i, transposed) * 2 <= wide else [bm, wide]
    return {"BLOCK_M": ms, "BLOCK_N": [bn, bn // 2], "BLOCK_K": [bk]}
FLOATS = ("float32", "float16", "bfloat16")


def _per_dim(gen, a: Any, b: Any, nsp: int, what: str) -> list[str]:
    """A per-spatial-dim convolution argument as *nsp* Python texts (a single value repeats)."""
    if not isinstance(a, list):
        a, b = [a], [b]
    if len(a) == 1:
        a, b = a * nsp, b * nsp
    if len(a) != nsp or any(isinstance(x, (dict, list, bool)) or x is None for x in a):
        raise NoSeed(f"convolution with {what} {a!r} has no template in the seed generator")
    return gen.nums(a, b)


def _is_int(text: str) -> bool:
    try:
        int(text)
        return True
    except ValueError:
        return False


def _size_symbol(gen, name: str, a: int, b: int, text: str) -> None:
    """Make ``S_<name>`` (defined in launch as *text*) a size symbol that is *a* and *b* in the
    two traces, so later size expressions of the graph can use it."""
    gen.body.append(f"S_{name} = {text}")
    gen.symbols.append(name)
    gen.envs[0][name], gen.envs[1][name] = a, b


def lower_convolution(gen, i: int) -> None:
    node, other = gen.g[i], gen.h[i]
    op = node["op"]
    a, b = node["args"], other["args"]
    if len(a) != 9 or node.get("kwargs"):
        raise NoSeed(f"{op} with arguments {a!r} has no template in the seed generator")
    x, w = gen.tensor(a[0]), gen.tensor(a[1])
    bias = gen.tensor(a[2]) if a[2] is not None else None
    nsp = w["rank"] - 2
    if not 1 <= nsp <= 3 or x["rank"] != nsp + 2 or node["shape"] is None or len(node["shape"]) != nsp + 2:
        raise NoSeed(f"{op} over {nsp} spatial dims (input rank {x['rank']}) has no template in the seed generator")
    dtypes = {x["dtype"], w["dtype"]} | ({bias["dtype"]} if bias else set())
    if not dtypes <= set(FLOATS) or node["dtype"] not in FLOATS:
        raise NoSeed(f"{op} on {sorted(dtypes)} has no template in the seed generator")
    if not isinstance(a[6], bool):
        raise NoSeed(f"{op} with a non-constant 'transposed' flag has no template in the seed generator")
    transposed = a[6]
    stride = _per_dim(gen, a[3], b[3], nsp, "stride")
    padding = _per_dim(gen, a[4], b[4], nsp, "padding")
    dilation = _per_dim(gen, a[5], b[5], nsp, "dilation")
    out_pad = _per_dim(gen, a[7], b[7], nsp, "output padding") if transposed else ["0"] * nsp
    groups = gen.num(a[8], b[8])
    if any(_is_int(s) and int(s) < 1 for s in stride + dilation):
        raise NoSeed(f"{op} with a stride or dilation below 1 is not a convolution")

    xv, wv = x["var"], w["var"]
    body = gen.body
    grp = f"g{i}"
    body.append(f"{grp} = {groups}")
    if transposed:            # weight [C_in, C_out / groups, k...]
        body += [f"cig{i} = {xv}.shape[1] // {grp}", f"cog{i} = {wv}.shape[1]"]
    else:                     # weight [C_out, C_in / groups, k...]
        body += [f"cig{i} = {wv}.shape[1]", f"cog{i} = {wv}.shape[0] // {grp}"]
    for d in range(nsp):
        n, k = f"{xv}.shape[{d + 2}]", f"{wv}.shape[{d + 2}]"
        s, p, dil, op_ = stride[d], padding[d], dilation[d], out_pad[d]
        if transposed:
            text = f"({n} - 1) * ({s}) - 2 * ({p}) + ({dil}) * ({k} - 1) + ({op_}) + 1"
        else:
            text = f"({n} + 2 * ({p}) - ({dil}) * ({k} - 1) - 1) // ({s}) + 1"
        ga, gb = node["shape"][d + 2], other["shape"][d + 2]
        if ga != gb:                      # a size: a symbol later ops (and the allocation) use
            _size_symbol(gen, f"0c{i}_{d}", ga, gb, text)
    out = gen.new(i)
    if dtypes == {"float16"}:
        precision, cast = "", False       # fp16 operands, fp32 accumulation
    else:                                 # fp32 (and bf16 or mixed operands, cast to fp32) in full fp32
        precision, cast = ', input_precision="ieee"', dtypes != {"float32"}
    consts = [s for d in range(nsp) for s in (stride[d], padding[d], dilation[d])]
    name = f"conv_{i}"
    values = tuple(int(c) if _is_int(c) else None for c in consts)
    gen.kernels.append(conv(name, nsp, transposed, bias is not None, precision, cast, values))
    for key, values in _blocks(gen, i, transposed, a[8], nsp).items():
        gen.params.setdefault(key, values)
    rank = nsp + 2
    positions = " * ".join(f"{out}.shape[{d + 2}]" for d in range(nsp))
    window = " * ".join(f"{wv}.shape[{d + 2}]" for d in range(nsp))
    args = [xv] + [f"{xv}.stride({d})" for d in range(rank)] + [wv] + [f"{wv}.stride({d})" for d in range(rank)]
    if bias is not None:
        args += [bias["var"], f"{bias['var']}.stride(0)"]
    args += [out, f"{out}.stride(1)", f"{out}.shape[1]", f"cig{i}", f"cog{i}", grp, positions,
             f"cig{i} * {window}"]
    args += [f"{out}.shape[{d + 2}]" for d in range(nsp)] + [f"{xv}.shape[{d + 2}]" for d in range(nsp)]
    args += [f"{wv}.shape[{d + 2}]" for d in range(nsp)]
    args += [f"{what}{d}={consts[3 * d + j]}" for d in range(nsp) for j, what in enumerate(("S", "PD", "D"))]
    grid = f"(triton.cdiv({positions}, BLOCK_N), triton.cdiv(cog{i}, BLOCK_M), {out}.shape[0] * {grp})"
    body.append(f"{name}[{grid}]({', '.join(args)}, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, "
                "num_warps=num_warps)")


LOWERINGS = {"convolution": lower_convolution}
