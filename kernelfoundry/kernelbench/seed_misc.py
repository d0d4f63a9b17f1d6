"""Seed lowerings of data-movement ops: ``as_strided`` views, ``flip``, ``cat``, ``gather``, allocations.

- ``as_strided(x, size, stride, offset)`` stays a view in ``launch`` (over a contiguous copy of
  ``x`` when needed) where the traced ``x`` was contiguous from offset 0, so the strides mean the
  same on the seed's tensor (GroupNorm's decomposition reshapes its statistics this way);
- ``flip(x, dims)`` and ``gather(x, dim, index)`` are one *remap* kernel: a program per
  ``BLOCK`` output elements loads ``x`` at remapped coordinates (``n - 1 - i`` along a flipped
  dim, a value of ``index`` along the gathered one); torch has no negative-stride views;
- ``cat(pieces, dim)``: one kernel per piece writes it (a fused pointwise expression or a
  tensor, broadcast as usual) into its slice of the output through the output's strides;
- ``empty``/``empty_permuted``/``empty_like`` allocate (contiguous) like ``torch.empty``;
- a constant tensor of several elements built inside ``forward`` is refused, naming it.
"""

from __future__ import annotations

from typing import Any

from .templates import _split, pointwise_head
from .noseed import NoSeed
from .seed_body import _Body


def remap_kernel(name: str, rank: int, flips: tuple[int, ...], gather_dim: int | None) -> str:
    """out[i] = x[c(i)], flat over a contiguous rank-*rank* output: ``c_d = d_d - 1 - i_d`` along
    *flips*, ``c_d = index[i]`` along *gather_dim*, else ``i_d``."""
    params = ["x"] + [f"xs{d}" for d in range(rank)]
    if gather_dim is not None:
        params += ["ix"] + [f"is{d}" for d in range(rank)]
    params += ["out", "n"] + [f"d{d}" for d in range(rank)] + ["BLOCK: tl.constexpr"]
    lines = ["@triton.jit", f"def {name}({', '.join(params)}):",
             "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
             "    mask = offs < n"]
    lines += _split("offs", "", [f"d{d}" for d in range(rank)], "i")
    if gather_dim is not None:
        addr = " + ".join(f"i{d} * is{d}" for d in range(rank))
        lines.append(f"    g = tl.load(ix + {addr}, mask=mask, other=0)")
    terms = []
    for d in range(rank):
        coord = "g" if d == gather_dim else f"(d{d} - 1 - i{d})" if d in flips else f"i{d}"
        terms.append(f"{coord} * xs{d}")
    lines.append(f"    v = tl.load(x + {' + '.join(terms)}, mask=mask, other=0)")
    lines.append("    tl.store(out + offs, v.to(out.dtype.element_ty), mask=mask)")
    return "\n".join(lines) + "\n"


def strided_pointwise_kernel(name: str, n_in: int, rank: int, n_const: int, body: list[str], value: str) -> str:
    """The elementwise template storing through the output's strides (a slice of a larger tensor)."""
    lines = pointwise_head(name, n_in, rank, ["out"] + [f"out_s{d}" for d in range(rank)], n_const, body)
    dst = " + ".join(f"i{d} * out_s{d}" for d in range(rank))
    lines.append(f"    tl.store(out + {dst}, ({value}).to(out.dtype.element_ty), mask=mask)")
    return "\n".join(lines) + "\n"


def _ref(arg: Any, what: str) -> int:
    if not (isinstance(arg, dict) and "ref" in arg):
        raise NoSeed(f"{what} takes {arg!r} where the generator expects a tensor")
    return arg["ref"]


def _contiguous_strides(shape: list[int]) -> list[int]:
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= d
    return out[::-1]


def _same_strides(shape: list[int], stride: list[int]) -> bool:
    """*stride* lays *shape* out contiguously (dims of size 1 may have any stride)."""
    return all(n == 1 or s == c for n, s, c in zip(shape, stride, _contiguous_strides(shape)))


def lower_as_strided(gen, i: int) -> None:
    node, other = gen.g[i], gen.h[i]
    src_ref = _ref(node["args"][0], node["op"])
    traced = gen.g[src_ref]
    if "stride" not in traced or not _same_strides(traced["shape"], traced["stride"]) or traced.get("offset"):
        raise NoSeed(f"{node['op']} over a tensor that is not contiguous from offset 0 in the trace has no template")
    src = gen.contiguous(gen.tensor(node["args"][0]), i)
    a, b = node["args"][1:], other["args"][1:]
    size, stride = gen.nums(a[0], b[0]), gen.nums(a[1], b[1])
    offset = gen.num(a[2], b[2]) if len(a) > 2 and a[2] is not None else "0"
    tup = (lambda xs: "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")")
    gen.body.append(f"t{i} = {src['var']}.as_strided({tup(size)}, {tup(stride)}, {offset})")
    gen.vals[i] = {"kind": "tensor", "var": f"t{i}", "rank": len(node["shape"]), "dtype": node["dtype"],
                   "contig": offset == "0" and _same_strides(node["shape"], a[1]), "input": False,
                   "view_of": src_ref}


def _remap(gen, i: int, src_arg: Any, flips: tuple[int, ...], gather: tuple[int, Any] | None) -> None:
    node = gen.g[i]
    src = gen.tensor(src_arg)
    rank = len(node["shape"])
    if rank == 0:
        raise NoSeed(f"{node['op']} of a 0-d tensor has no template")
    name = f"remap_{i}"
    gen.kernels.append(remap_kernel(name, rank, flips, gather[0] if gather else None))
    gen.params.setdefault("BLOCK", [1024, 256])
    out = gen.new(i)
    args = [src["var"]] + [f"{src['var']}.stride({d})" for d in range(rank)]
    if gather:
        index = gen.tensor(gather[1])
        args += [index["var"]] + [f"{index['var']}.stride({d})" for d in range(rank)]
    args += [out, f"{out}.numel()"] + [f"{out}.shape[{d}]" for d in range(rank)]
    gen.body.append(f"{name}[(triton.cdiv({out}.numel(), BLOCK),)]({', '.join(args)}, BLOCK=BLOCK, "
                    "num_warps=num_warps)")


def lower_flip(gen, i: int) -> None:
    node = gen.g[i]
    rank = max(len(node["shape"]), 1)
    _remap(gen, i, node["args"][0], tuple(sorted({d % rank for d in node["args"][1]})), None)


def lower_gather(gen, i: int) -> None:
    node = gen.g[i]
    if node.get("kwargs", {}).get("sparse_grad") or (len(node["args"]) > 3 and node["args"][3]):
        raise NoSeed("gather with sparse_grad has no template")
    rank = max(len(node["shape"]), 1)
    _remap(gen, i, node["args"][0], (), (node["args"][1] % rank, node["args"][2]))


def lower_cat(gen, i: int) -> None:
    node, other = gen.g[i], gen.h[i]
    pieces, dim = node["args"][0], (node["args"][1] if len(node["args"]) > 1 else node.get("kwargs", {}).get("dim", 0))
    rank = len(node["shape"])
    dim = (dim or 0) % max(rank, 1)
    out = gen.new(i)
    gen.params.setdefault("BLOCK", [1024, 256])
    gen.helpers.add("bcast")
    offset = "0"
    for k, (piece, piece_h) in enumerate(zip(pieces, other["args"][0])):
        ref = _ref(piece, node["op"])
        shape, shape_h = gen.g[ref]["shape"], gen.h[ref]["shape"]
        if len(shape) != rank:                     # legacy cat of an empty 1-D tensor
            raise NoSeed(f"{node['op']} of a piece of rank {len(shape)} into rank {rank} has no template")
        v = gen.vals.get(ref)
        body = _Body(gen)
        if v is None:
            raise NoSeed(f"value {ref} is used before it is computed")
        value = body.const(v["text"]) if v["kind"] == "scalar" else body.expr(ref) if v["kind"] == "expr" \
            else body.leaf(v) if v["kind"] == "tensor" else None
        if value is None:
            raise NoSeed(f"{node['op']} of a {v['kind']}")
        name, view = f"cat_{i}_{k}", f"t{i}_p{k}"
        length = gen.num(shape[dim], shape_h[dim])
        gen.body.append(f"{view} = {out}.narrow({dim}, {offset}, {length})")
        offset = length if offset == "0" else f"{offset} + {length}"
        gen.kernels.append(strided_pointwise_kernel(name, len(body.leaves), rank, len(body.consts), body.lines,
                                                    value))
        args = []
        for j, leaf in enumerate(body.leaves):
            src = f"{name}_in{j}"
            gen.body.append(f"{src} = bcast({leaf['var']}, {view}.shape)")
            args += [src] + [f"{src}.stride({d})" for d in range(rank)]
        args += [view] + [f"{view}.stride({d})" for d in range(rank)] + [f"{view}.numel()"]
        args += [f"{view}.shape[{d}]" for d in range(rank)] + body.consts
        gen.body.append(f"{name}[(triton.cdiv({view}.numel(), BLOCK),)]({', '.join(args)}, BLOCK=BLOCK, "
                        "num_warps=num_warps)")


def lower_empty(gen, i: int) -> None:
    gen.new(i)


def refuse_constant(gen, i: int) -> None:
    node = gen.g[i]
    raise NoSeed(f"a constant tensor of {node.get('numel')} elements made inside forward ({node.get('name')}, "
                 "e.g. torch.tensor([...])) has no template: only single-value constants are embedded")


def refuse_random(gen, i: int) -> None:
    raise NoSeed(f"op {gen.g[i]['op']} draws random numbers (dropout with p > 0 in training mode); a seed "
                 "cannot reproduce them")


LOWERINGS = {"as_strided": lower_as_strided, "flip": lower_flip, "gather": lower_gather, "cat": lower_cat,
             "empty": lower_empty, "empty_permuted": lower_empty, "empty_like": lower_empty,
             "new_empty": lower_empty, "constant_tensor": refuse_constant,
             **{op: refuse_random for op in ("bernoulli", "bernoulli_", "rand", "rand_like", "randn", "randn_like",
                                            "native_dropout", "uniform_", "normal_")}}
