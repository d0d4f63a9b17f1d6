"""Seed lowerings of pooling windows: max pooling (with its indices), average pooling, adaptive pooling.

One template covers them all: a program per ``BLOCK_POOL`` output elements (flat, contiguous
output) loops over the window's outer dims and gathers the innermost one ``WB`` lanes at a
time (masked ``[BLOCK_POOL, WB]`` loads, strided input), fp32 accumulation.  1D pooling
reaches the seed generator as 2D over an unsqueezed ``H = 1`` dim, and global average pooling
as a ``mean`` (a core reduction), so the ops here are

- ``max_pool{2,3}d_with_indices(x, kernel, stride, padding, dilation, ceil_mode)`` -> (values,
  indices): the indices (flat positions in the input's spatial plane, the first maximum, NaN
  propagating as PyTorch does) are stored only when the graph reads them;
- ``avg_pool{2,3}d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)``;
- ``_adaptive_avg_pool{2,3}d(x, output_size)`` and ``adaptive_max_pool{2,3}d`` (windows
  ``[floor(o * n / m), ceil((o + 1) * n / m))``, looped up to their largest length).

Window sizes, strides, paddings and dilations are ``tl.constexpr`` arguments (constants of the
graph); output sizes are computed in ``launch`` from the input's shape with PyTorch's formula,
so the seed is correct at any shape.  An output size that changes between the two traces also
becomes a size symbol of the generator (``S_0p<node>_<d>``), so the ops after the pooling (a
sum's view, a pointwise kernel's buffer) can express their sizes through it even where a
strided window's size is no product of the input's sizes.
"""

from __future__ import annotations

from typing import Any

from .templates import _split
from .noseed import NoSeed

FLOATS = ("float32", "float16", "bfloat16", "float64")
BLOCK_VALUES = [1024, 256]
NO_POS = 1 << 62                     # a lane that has seen no element of the input yet


def pool_kernel(name: str, kind: str, n_lead: int, nsp: int, adaptive: bool, with_idx: bool,
                divisor: str, fp32: bool = False) -> str:
    """A pooling kernel over a rank ``n_lead + nsp`` input (strided) into a contiguous output.

    A program takes ``BLOCK_POOL`` output elements; it loops over the window's outer dims and
    loads the innermost window dim ``WB`` lanes at a time (a ``[BLOCK_POOL, WB]`` tile), reducing
    the lanes at the end.  *kind* is ``max`` or ``avg``; *divisor* (avg, fixed windows) is ``pad``
    (count_include_pad), ``valid`` (count the window's elements inside the input) or ``override``
    (the ``DIV`` constexpr).  Fixed windows take ``K{d}, S{d}, P{d}, D{d}`` constexprs, adaptive
    ones the runtime loop bounds ``W{d}``.  *fp32*: the input is float32 (no cast after the load)."""
    rank, last = n_lead + nsp, nsp - 1
    params = ["x"] + [f"xs{d}" for d in range(rank)] + ["out"] + (["idx"] if with_idx else []) + ["n"]
    params += [f"od{d}" for d in range(rank)] + [f"in{d}" for d in range(nsp)]
    if adaptive:
        params += [f"W{d}" for d in range(nsp)]
    else:
        for d in range(nsp):
            params += [f"K{d}: tl.constexpr", f"S{d}: tl.constexpr", f"P{d}: tl.constexpr", f"D{d}: tl.constexpr"]
        if divisor == "override":
            params.append("DIV: tl.constexpr")
    params += ["WB: tl.constexpr", "BLOCK_POOL: tl.constexpr"]
    lines = ["@triton.jit", f"def {name}({', '.join(params)}):",
             "    offs = tl.program_id(0) * BLOCK_POOL + tl.arange(0, BLOCK_POOL)",
             "    mask = offs < n"]
    lines += _split("offs", "", [f"od{d}" for d in range(rank)], "j")
    lines.append(f"    base = {' + '.join(f'j{d} * xs{d}' for d in range(n_lead))}")
    for d in range(nsp):
        j = f"j{n_lead + d}"
        if adaptive:       # [floor(j * in / od), ceil((j + 1) * in / od))
            lines += [f"    lo{d} = ({j} * in{d}) // od{n_lead + d}",
                      f"    hi{d} = (({j} + 1) * in{d} + od{n_lead + d} - 1) // od{n_lead + d}"]
        else:
            lines.append(f"    lo{d} = {j} * S{d} - P{d}")
    tile = "[BLOCK_POOL, WB]"
    if kind == "max":
        lines.append(f"    best = tl.full({tile}, float('-inf'), dtype=tl.float32)")
        if with_idx:
            lines.append(f"    pos = tl.full({tile}, {NO_POS}, dtype=tl.int64)")
    else:
        lines.append(f"    acc = tl.zeros({tile}, dtype=tl.float32)")
    lines += ["    lanes = tl.arange(0, WB)", "    p = x + base"]
    pad = "    "
    for d in range(last):                   # the outer window dims: one step at a time
        prev, ptr = (f"ok{d - 1}", f"p{d - 1}") if d else ("mask", "p")
        if adaptive:
            lines += [f"{pad}for k{d} in range(0, W{d}):",
                      f"{pad}    i{d} = lo{d} + k{d}",
                      f"{pad}    ok{d} = {prev} & (i{d} < hi{d})"]
        else:
            lines += [f"{pad}for k{d} in range(0, K{d}):",
                      f"{pad}    i{d} = lo{d} + k{d} * D{d}",
                      f"{pad}    ok{d} = {prev} & (i{d} >= 0) & (i{d} < in{d})"]
        lines.append(f"{pad}    p{d} = {ptr} + i{d} * xs{n_lead + d}")
        pad += "    "
    prev, ptr = (f"ok{last - 1}", f"p{last - 1}") if last else ("mask", "p")
    L = last
    if adaptive:                            # the innermost window dim: WB lanes at a time
        lines += [f"{pad}for k{L} in range(0, W{L}, WB):",
                  f"{pad}    i{L} = lo{L}[:, None] + (k{L} + lanes)[None, :]",
                  f"{pad}    ok{L} = {prev}[:, None] & (i{L} < hi{L}[:, None])"]
    else:
        lines += [f"{pad}for k{L} in range(0, K{L}, WB):",
                  f"{pad}    kk = k{L} + lanes",
                  f"{pad}    i{L} = lo{L}[:, None] + (kk * D{L})[None, :]",
                  f"{pad}    ok{L} = {prev}[:, None] & (kk < K{L})[None, :] & (i{L} >= 0) & (i{L} < in{L})"]
    pad += "    "
    other = "float('-inf')" if kind == "max" else "0.0"
    cast = "" if fp32 else ".to(tl.float32)"
    lines.append(f"{pad}v = tl.load({ptr}[:, None] + i{L} * xs{n_lead + L}, mask=ok{L}, other={other}){cast}")
    if kind == "max":                       # PyTorch's rule: take v if v > best or v is NaN; first max wins
        if with_idx:                        # pos == NO_POS: the lane's first element inside the input
            flat = "i0"
            for d in range(1, last):
                flat = f"({flat}) * in{d} + i{d}"
            flat = f"({flat})[:, None] * in{L} + i{L}" if last else f"i{L}"
            lines += [f"{pad}better = ok{L} & ((v > best) | (v != v) | (pos == {NO_POS}))",
                      f"{pad}best = tl.where(better, v, best)",
                      f"{pad}pos = tl.where(better, ({flat}).to(tl.int64), pos)"]
        else:
            lines.append(f"{pad}best = tl.where((v > best) | (v != v), v, best)")   # masked: -inf
        # across lanes: NaN if any lane holds one (the last NaN's index), else the max (its first index)
        lines += ["    isnan = best != best",
                  "    nan = tl.max(isnan.to(tl.int32), axis=1) > 0",
                  "    top = tl.max(tl.where(isnan, float('-inf'), best), axis=1)",
                  "    res = tl.where(nan, tl.sum(tl.where(isnan, best, 0.0), axis=1), top)",
                  "    tl.store(out + offs, res.to(out.dtype.element_ty), mask=mask)"]
        if with_idx:
            lines += [f"    first = tl.min(tl.where(best == top[:, None], pos, {NO_POS}), axis=1)",
                      "    last = tl.max(tl.where(isnan, pos, -1), axis=1)",
                      "    tl.store(idx + offs, tl.where(nan, last, first), mask=mask)"]
        return "\n".join(lines) + "\n"
    lines.append(f"{pad}acc += v")
    if adaptive:
        count = " * ".join(f"(hi{d} - lo{d})" for d in range(nsp))
    elif divisor == "override":
        count = "DIV"
    else:                                   # PyTorch: the window clipped to the padded input, then to the input
        for d in range(nsp):
            lines.append(f"    hi{d} = tl.minimum(lo{d} + K{d}, in{d} + P{d})")
        if divisor == "pad":
            count = " * ".join(f"(hi{d} - lo{d})" for d in range(nsp))
        else:
            count = " * ".join(f"(tl.minimum(hi{d}, in{d}) - tl.maximum(lo{d}, 0))" for d in range(nsp))
    lines.append(f"    res = tl.sum(acc, axis=1) / ({count})")
    lines.append("    tl.store(out + offs, res.to(out.dtype.element_ty), mask=mask)")
    return "\n".join(lines) + "\n"


def lanes(k: str | None) -> int:
    """The lanes of the innermost window dim loaded at once: the window's width up to 8."""
    k_int = _int(k) if k is not None else None
    return min(1 << max(k_int - 1, 0).bit_length(), 8) if k_int else 8


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _out_size(n: str, k: str, s: str, p: str, d: str, ceil: bool) -> str:
    """PyTorch's pooling output size (``pooling_output_shape``) as Python over ints."""
    ki, si, pi, di = _int(k), _int(s), _int(p), _int(d)
    if None in (ki, si, pi, di):
        num = f"{n} + 2 * ({p}) - ({d}) * (({k}) - 1) - 1" + (f" + ({s}) - 1" if ceil else "")
        size = f"({num}) // ({s}) + 1"
        return f"min({size}, ({n} + ({p}) - 1) // ({s}) + 1)" if ceil else size
    c = 2 * pi - di * (ki - 1) - 1 + (si - 1 if ceil else 0)
    size = f"{_plus(n, c)} // {si} + 1" if si != 1 else _plus(n, c + 1)
    # ceil_mode: the last window must start inside the input or its left padding
    return f"min({size}, {_plus(n, pi - 1)} // {si} + 1)" if ceil else size


def _plus(n: str, c: int) -> str:
    return f"({n} {'+' if c > 0 else '-'} {abs(c)})" if c else n


def _arg_list(node: dict, names: list[str], defaults: list[Any]) -> list[Any]:
    """The op's arguments after the input, by name, with PyTorch's defaults filled in."""
    a, kw = list(node["args"][1:]), node.get("kwargs") or {}
    return [a[k] if k < len(a) else kw.get(name, default) for k, (name, default) in enumerate(zip(names, defaults))]


def _per_dim(gen, a: Any, b: Any, nsp: int, what: str) -> list[str]:
    """An int-or-list pooling argument as *nsp* Python texts (a one-element list repeats)."""
    if not isinstance(a, list):
        a, b = [a], [b]
    if len(a) == 1:
        a, b = a * nsp, b * nsp
    if len(a) != nsp or any(isinstance(x, (dict, list)) or x is None for x in a):
        raise NoSeed(f"pooling with {what} {a!r} has no template in the seed generator")
    return gen.nums(a, b)


def _out_shapes(gen, i: int) -> tuple[list, list] | None:
    """The output's traced shapes in the two traces (a max pool's: its values' getitem)."""
    if gen.g[i]["shape"] is not None:
        return gen.g[i]["shape"], gen.h[i]["shape"]
    for u in sorted(gen.users.get(i, set())):
        if gen.g[u]["op"] == "<built-in function getitem>" and gen.g[u]["shape"] is not None:
            return gen.g[u]["shape"], gen.h[u]["shape"]
    return None


def _lower(gen, i: int, kind: str, nsp: int, adaptive: bool) -> None:
    node, other = gen.g[i], gen.h[i]
    op = node["op"]
    src = gen.tensor(node["args"][0])
    rank, dtype = src["rank"], src["dtype"]
    n_lead = rank - nsp
    if n_lead < 0:
        raise NoSeed(f"{op} on a rank-{rank} input has no template in the seed generator")
    if dtype not in FLOATS:
        raise NoSeed(f"{op} on {dtype} has no template in the seed generator")
    x = src["var"]
    with_idx = kind == "max" and gen.indices_used(i)
    divisor = "pad"
    consts: list[str] = []                           # the launch's constexpr keywords
    body = gen.body
    sizes = [f"{x}.shape[{d}]" for d in range(n_lead)]
    extra = []
    if adaptive:
        a, b = _arg_list(node, ["output_size"], [None]), _arg_list(other, ["output_size"], [None])
        outs = _per_dim(gen, a[0], b[0], nsp, "output size")
        for d, m in enumerate(outs):
            n = f"{x}.shape[{n_lead + d}]"
            body.append(f"o{i}_{d} = {m}")
            body.append(f"w{i}_{d} = {n} // o{i}_{d} + 2 * min({n} % o{i}_{d}, 1)")   # the longest window
            sizes.append(f"o{i}_{d}")
            extra.append(f"w{i}_{d}")
    else:
        if kind == "max":
            names = ["kernel_size", "stride", "padding", "dilation", "ceil_mode"]
            defaults = [None, [], 0, 1, False]
        else:
            names = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"]
            defaults = [None, [], 0, False, True, None]
        a, b = _arg_list(node, names, defaults), _arg_list(other, names, defaults)
        ks = _per_dim(gen, a[0], b[0], nsp, "kernel size")
        ss = _per_dim(gen, a[1], b[1], nsp, "stride") if a[1] not in ([], None) else ks
        ps = _per_dim(gen, a[2], b[2], nsp, "padding")
        ds = _per_dim(gen, a[3], b[3], nsp, "dilation") if kind == "max" else ["1"] * nsp
        ceil = bool(a[4] if kind == "max" else a[3])
        if kind == "avg":
            if a[5] is not None:
                divisor = "override"
                consts.append(f"DIV={gen.num(a[5], b[5])}")
            elif not a[4]:
                divisor = "valid"
        traced = _out_shapes(gen, i)
        for d in range(nsp):
            body.append(f"o{i}_{d} = {_out_size(f'{x}.shape[{n_lead + d}]', ks[d], ss[d], ps[d], ds[d], ceil)}")
            sizes.append(f"o{i}_{d}")
            ga, gb = (traced[0][n_lead + d], traced[1][n_lead + d]) if traced else (None, None)
            if ga != gb:          # a size (often no product of the input's): a symbol later ops can use
                body.append(f"S_0p{i}_{d} = o{i}_{d}")
                gen.symbols.append(f"0p{i}_{d}")
                gen.envs[0][f"0p{i}_{d}"], gen.envs[1][f"0p{i}_{d}"] = ga, gb
            consts += [f"K{d}={ks[d]}", f"S{d}={ss[d]}", f"P{d}={ps[d]}", f"D{d}={ds[d]}"]
    name = f"{'maxpool' if kind == 'max' else 'avgpool'}_{i}"
    gen.kernels.append(pool_kernel(name, kind, n_lead, nsp, adaptive, with_idx, divisor, dtype == "float32"))
    gen.params.setdefault("BLOCK_POOL", list(BLOCK_VALUES))
    out_dtype = dtype if kind == "max" else (node["dtype"] or dtype)
    out = f"t{i}"
    shape = "(" + ", ".join(sizes) + ("," if len(sizes) == 1 else "") + ")"
    body.append(f"{out} = torch.empty({shape}, device=DEV, dtype=torch.{out_dtype})")
    args = [x] + [f"{x}.stride({d})" for d in range(rank)] + [out]
    value = {"kind": "tensor", "var": out, "rank": rank, "contig": True, "dtype": out_dtype, "input": False}
    idx_value = None
    if with_idx:
        body.append(f"{out}_idx = torch.empty({shape}, device=DEV, dtype=torch.int64)")
        args.append(f"{out}_idx")
        idx_value = dict(value, var=f"{out}_idx", dtype="int64")
    consts.append(f"WB={lanes(None if adaptive else ks[-1])}")
    args += [f"{out}.numel()"] + sizes + [f"{x}.shape[{n_lead + d}]" for d in range(nsp)] + extra + consts
    body.append(f"{name}[(triton.cdiv({out}.numel(), BLOCK_POOL),)]({', '.join(args)}, BLOCK_POOL=BLOCK_POOL, "
                "num_warps=num_warps)")
    gen.vals[i] = {"kind": "tuple", "items": [value, idx_value]} if kind == "max" else value


def _lowering(kind: str, nsp: int, adaptive: bool = False):
    return lambda gen, i: _lower(gen, i, kind, nsp, adaptive)


LOWERINGS = {
    "max_pool2d_with_indices": _lowering("max", 2),
    "max_pool3d_with_indices": _lowering("max", 3),
    "avg_pool2d": _lowering("avg", 2),
    "avg_pool3d": _lowering("avg", 3),
    "_adaptive_avg_pool2d": _lowering("avg", 2, adaptive=True),
    "_adaptive_avg_pool3d": _lowering("avg", 3, adaptive=True),
    "adaptive_max_pool2d": _lowering("max", 2, adaptive=True),
    "adaptive_max_pool3d": _lowering("max", 3, adaptive=True),
}
