"""A naive but correct starting kernel for an imported problem, generated from its aten graph.

The traced reference (:mod:`.graph`) is lowered op by op: runs of pointwise ops over one
shape become one flat kernel (the elementwise template), reductions a kernel with a program
per output element looping over the reduced elements (the row-reduction template), scans
a program per row, ``mm``/``bmm`` a tiled ``tl.dot`` kernel; views stay views in ``launch``.
Intermediates go through ``torch.empty`` buffers, so level-2 problems start as several
kernels the built-in mutator can tune.  Ops outside these templates (convolutions,
pooling windows, scatter, sorting, random numbers, in-place buffer updates) raise
:class:`NoSeed` naming the op: no seed computes anything with torch.
"""

from __future__ import annotations

import math
from typing import Any

from . import templates
from .lowerings import LOWERINGS
from .noseed import NoSeed
from .ops import CASTS, CONSTANTS, FLOAT, POINTWISE
from .seed_body import _Body, _base
from .sizes import SizeError, size_expr

VIEWS = {"view", "_unsafe_view", "reshape", "permute", "t", "transpose", "expand", "unsqueeze", "squeeze",
         "alias", "detach", "lift_fresh_copy", "slice", "select", "broadcast_in_dim", "squeeze_copy"}
REDUCTIONS = {"sum", "mean", "amax", "amin", "var", "prod", "argmax", "argmin", "max", "min"}
SCANS = {"cumsum", "cumprod"}


class _Gen:
    def __init__(self, graphs: list[list[dict]], envs: list[dict[str, int]], inputs: list[dict],
                 sizes: dict[str, tuple[int, int]], target: dict[str, int] | None = None):
        self.g, self.h = graphs
        self.envs, self.target = envs, target
        self.symbols = list(sizes)
        self.inputs, self.sizes = inputs, sizes
        if [n["op"] for n in self.g] != [n["op"] for n in self.h]:
            raise NoSeed("the traced reference runs different ops at different shapes")
        self.dead: set[int] = set()
        self._fold_identities()
        self.users: dict[int, set[int]] = {}
        for i, node in enumerate(self.g):
            for ref in _refs(node.get("args")) + _refs(node.get("kwargs")):
                self.users.setdefault(ref, set()).add(i)
        for i in range(len(self.g) - 1, -1, -1):        # dead code (an unused empty(), a buffer update's inputs)
            base = _base(self.g[i]["op"])
            if self.g[i]["op"] not in ("input", "output") and not base.endswith("_") \
                    and not (self.users.get(i, set()) - self.dead):
                self.dead.add(i)
        self.kernels: list[str] = []
        self.body: list[str] = []
        self.vals: dict[int, dict[str, Any]] = {}
        self.params: dict[str, list[int]] = {}
        self.helpers: set[str] = set()
        self.skipped: list[str] = []

    def _fold_identities(self) -> None:
        """Drop ``x * 1``, ``x + 0``, ``x - 0``, ``x / 1`` (decompositions leave them): users read x."""
        alias: dict[int, int] = {}
        for i, (node, other) in enumerate(zip(self.g, self.h)):
            base, args = _base(node["op"]), node.get("args") or []
            if base not in ("mul", "add", "sub", "div") or len(args) != 2 or node.get("kwargs"):
                continue
            for k, unit in ((1, 1 if base in ("mul", "div") else 0), (0, 1 if base == "mul" else None)):
                x, c = args[1 - k], args[k]
                if unit is None or not (isinstance(x, dict) and "ref" in x) or isinstance(c, (dict, list, bool)):
                    continue
                src = self.g[alias.get(x["ref"], x["ref"])]
                if c == unit and other["args"][k] == unit and src.get("shape") == node["shape"] \
                        and src.get("dtype") == node["dtype"]:
                    alias[i] = alias.get(x["ref"], x["ref"])
                    self.dead.add(i)
                    break

        def rewrite(value: Any) -> Any:
            if isinstance(value, dict):
                if "ref" in value:
                    return {"ref": alias.get(value["ref"], value["ref"])}
                return {k: rewrite(v) for k, v in value.items()}
            if isinstance(value, list):
                return [rewrite(v) for v in value]
            return value
        for graph in (self.g, self.h):
            for node in graph:
                for key in ("args", "kwargs"):
                    if key in node:
                        node[key] = rewrite(node[key])

    # -------------------------------------------------------------- numbers and shapes
    def num(self, a: Any, b: Any) -> str:
        if isinstance(a, bool) or a is None or isinstance(a, str):
            return repr(a)
        try:
            return size_expr(a, b, *self.envs, self.symbols)
        except SizeError as exc:
            raise NoSeed(str(exc)) from None

    def at_target(self, i: int, dims: list[int]) -> list[int] | None:
        """Node *i*'s extents along *dims* at the problem's own sizes, or None (no target given, an
        extent the generator derives in ``launch``, such as a convolution's output size)."""
        if self.target is None or self.g[i]["shape"] is None:
            return None
        scope = {f"S_{s}": v for s, v in self.target.items()}
        base = [s for s in self.symbols if s in self.target]      # not the sizes derived in launch
        try:
            return [int(eval(size_expr(self.g[i]["shape"][d], self.h[i]["shape"][d], *self.envs, base),  # noqa: S307
                             {"__builtins__": {}, "float": float}, scope)) for d in dims]
        except (SizeError, NameError, TypeError, ValueError, ZeroDivisionError, SyntaxError, IndexError):
            return None

    def nums(self, a: list, b: list) -> list[str]:
        return [self.num(x, y) for x, y in zip(a, b)]

    def shape(self, i: int) -> str:
        dims = self.nums(self.g[i]["shape"], self.h[i]["shape"])
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"

    def new(self, i: int, dtype: str | None = None) -> str:
        name = f"t{i}"
        dtype = dtype or self.g[i]["dtype"]
        self.body.append(f"{name} = torch.empty({self.shape(i)}, device=DEV, dtype=torch.{dtype})")
        self.vals[i] = {"kind": "tensor", "var": name, "rank": len(self.g[i]["shape"]), "contig": True,
                        "dtype": dtype, "input": False}
        return name

    def contiguous(self, v: dict[str, Any], key: Any) -> dict[str, Any]:
        """*v* itself if contiguous, else a contiguous copy made by an identity kernel."""
        if v["contig"]:
            return v
        var = f"cp{key}"
        self.body.append(f"{var} = torch.empty({v['var']}.shape, device=DEV, dtype=torch.{v['dtype']})")
        body = _Body(self)
        value = body.leaf(v)
        self._pointwise(f"copy_{key}", body, value, var, v["rank"])
        return {"kind": "tensor", "var": var, "rank": v["rank"], "contig": True, "dtype": v["dtype"],
                "input": False}

    def materialize(self, arg: Any) -> dict[str, Any]:
        """The tensor value of *arg*; a virtual pointwise value gets its own kernel (once)."""
        if not (isinstance(arg, dict) and "ref" in arg):
            raise NoSeed(f"an op takes {arg!r} where the generator expects a tensor")
        i = arg["ref"]
        v = self.vals.get(i)
        if v is None:
            raise NoSeed(f"value {i} is used before it is computed")
        if v["kind"] == "scalar":                         # a constant (torch.tensor(0.5)) needed as a tensor
            out, body = self.new(i), _Body(self)
            self._pointwise(f"fill_{i}", body, body.const(v["text"]), out, len(self.g[i]["shape"]))
            v = self.vals[i]
        if v["kind"] == "expr":
            out = self.new(i)
            body = _Body(self)
            value = body.expr(i)
            self._pointwise(f"pointwise_{i}", body, value, out, len(self.g[i]["shape"]))
            v = self.vals[i]
        if v["kind"] != "tensor":
            raise NoSeed(f"{self.g[i]['op']} gives a {v['kind']} where the generator expects a tensor")
        return v

    tensor = materialize

    # -------------------------------------------------------------- lowering
    def run(self) -> str:
        for i, node in enumerate(self.g):
            op, base = node["op"], _base(node["op"])
            if i in self.dead:
                continue
            if op == "input":
                spec = self.inputs[node["index"]]
                self.vals[i] = {"kind": "tensor", "var": spec["name"], "contig": True, "rank": len(node["shape"]),
                                "dtype": node["dtype"], "input": True, "role": spec.get("role", "input")}
            elif base.endswith("_") and self._buffer_update(i):
                continue
            elif op == "output":
                self.output(node)
            elif base in ("full", "scalar_tensor") and node["shape"] == []:
                self.vals[i] = {"kind": "scalar", "text": self.num(node["args"][-1], self.h[i]["args"][-1])}
            elif base in POINTWISE or base in CASTS or base in CONSTANTS:
                self.vals[i] = {"kind": "expr", "node": i}       # computed where it is consumed
            elif base == "arange":
                self.arange(i)
            else:
                self.lower(i, base)
        return self.module()

    def _buffer_update(self, i: int) -> bool:
        """An in-place update of a Model buffer (BatchNorm's running statistics): not part of the
        output, which is all a task compares, so the seed leaves it out (and says so)."""
        target = self.g[i]["args"][0] if self.g[i].get("args") else None
        v = self.vals.get(target["ref"]) if isinstance(target, dict) and "ref" in target else None
        while v is not None and v.get("kind") == "tensor" and v.get("view_of") is not None:
            v = self.vals.get(v["view_of"])
        if v is None or v.get("role") != "buffer" or (self.users.get(i, set()) - self.dead):
            return False
        self.skipped.append(f"{self.g[i]['op']} on buffer input '{v['var']}'")
        return True

    def _pointwise(self, name: str, body: "_Body", value: str, out: str, rank: int) -> None:
        """Launch a flat kernel computing *value* into the contiguous tensor *out*."""
        self.kernels.append(templates.pointwise(name, len(body.leaves), rank, 1, len(body.consts), body.lines,
                                                [value]))
        self.params.setdefault("BLOCK", [1024, 256])
        args = []
        for k, v in enumerate(body.leaves):
            view = f"{name}_in{k}"
            self.body.append(f"{view} = bcast({v['var']}, {out}.shape)")
            self.helpers.add("bcast")
            args += [view] + [f"{view}.stride({d})" for d in range(rank)]
        args += [out, f"{out}.numel()"] + [f"{out}.shape[{d}]" for d in range(rank)] + body.consts
        self.body.append(f"{name}[(triton.cdiv({out}.numel(), BLOCK),)]({', '.join(args)}, BLOCK=BLOCK, "
                         "num_warps=num_warps)")

    def arange(self, i: int) -> None:
        node, other = self.g[i], self.h[i]
        a, b = node["args"], other["args"]
        start, step = (self.num(a[0], b[0]), self.num(a[2], b[2]) if len(a) > 2 else "1") if len(a) > 1 else \
            ("0", "1")
        out = self.new(i)
        body = _Body(self)
        value = f"({body.const(start)} + i0 * {body.const(step)})"
        self._pointwise(f"arange_{i}", body, value, out, 1)

    def lower(self, i: int, base: str) -> None:
        node, other = self.g[i], self.h[i]
        if base in VIEWS:
            return self.view(i, base)
        if base == "getitem":
            src = self.vals.get(node["args"][0]["ref"])
            if not src or src["kind"] != "tuple":
                raise NoSeed("getitem of something that is not a reduction's tuple")
            self.vals[i] = src["items"][node["args"][1]]
            if self.vals[i] is None:
                raise NoSeed(f"{self.g[node['args'][0]['ref']]['op']}: this output is not supported")
            return None
        if base in REDUCTIONS:
            return self.reduce(i, base)
        if base in SCANS:
            return self.scan(i, base)
        if base in ("mm", "bmm"):
            return self.matmul(i, base)
        if base in LOWERINGS:
            return LOWERINGS[base](self, i)
        raise NoSeed(f"op {node['op']} has no template in the seed generator")

    def view(self, i: int, base: str) -> None:
        node, other = self.g[i], self.h[i]
        if (self.vals.get(node["args"][0]["ref"]) or {}).get("kind") == "scalar":
            self.vals[i] = self.vals[node["args"][0]["ref"]]     # a view of a constant: the same number
            return
        src = self.tensor(node["args"][0])
        a, b = node["args"][1:], other["args"][1:]
        var, contig = src["var"], src["contig"]
        if base in ("view", "_unsafe_view", "reshape"):
            if not contig:
                src = self.contiguous(src, i)
                var = src["var"]
            text = f"{var}.view({', '.join(self.nums(a[0], b[0])) or '()'})"
        elif base == "permute":
            text, contig = f"{var}.permute({', '.join(map(str, a[0]))})", False
        elif base == "t":
            text, contig = f"{var}.t()", False
        elif base == "transpose":
            text, contig = f"{var}.transpose({a[0]}, {a[1]})", False
        elif base == "expand":
            text, contig = f"{var}.expand({', '.join(self.nums(a[0], b[0]))})", False
        elif base == "unsqueeze":
            text = f"{var}.unsqueeze({a[0]})"
        elif base in ("squeeze", "squeeze_copy"):
            dims = a[0] if a and isinstance(a[0], list) else (a if a else None)
            if dims is None:
                text = f"{var}.squeeze()"
            else:
                text = var
                for d in sorted((d % max(src['rank'], 1) for d in dims), reverse=True):
                    text = f"{text}.squeeze({d})"
        elif base == "slice":
            dim, start, end = (a + [0, None, None])[:3]
            step = a[3] if len(a) > 3 else 1
            if step != 1:
                raise NoSeed("a strided slice has no template in the seed generator")
            s0 = self.num(start or 0, (b + [0, 0])[1] or 0)
            e0 = f"{var}.shape[{dim}]" if end is None or end >= 2 ** 62 else self.num(end, b[2])
            text, contig = f"{var}.narrow({dim}, {s0}, min({e0}, {var}.shape[{dim}]) - {s0})", False
        elif base == "select":
            text, contig = f"{var}.select({a[0]}, {self.num(a[1], b[1])})", False
        elif base == "broadcast_in_dim":
            shape, kept = a[0], a[1]
            text = var
            for d in range(len(shape)):
                if d not in kept:
                    text = f"{text}.unsqueeze({d})"
            text, contig = f"{text}.expand({', '.join(self.nums(shape, b[0]))})", False
        else:                                             # alias, detach, lift_fresh_copy
            text = var
        self.body.append(f"t{i} = {text}")
        self.vals[i] = {"kind": "tensor", "var": f"t{i}", "rank": len(node["shape"]), "contig": contig,
                        "dtype": node["dtype"], "input": False, "view_of": node["args"][0]["ref"]}

    def reduce(self, i: int, base: str) -> None:
        node = self.g[i]
        a, kw, op = node["args"][1:], node.get("kwargs", {}), node["op"]
        src_ref = node["args"][0]
        src = self.vals.get(src_ref["ref"]) if isinstance(src_ref, dict) and "ref" in src_ref else None
        if src is None or src["kind"] not in ("tensor", "expr"):
            raise NoSeed(f"{op} reduces something that is not a tensor")
        in_shape = self.g[src_ref["ref"]]["shape"]
        rank = len(in_shape)
        kind = {"max": "amax", "min": "amin"}.get(base, base)
        correction = 0.0
        if base in ("argmax", "argmin", "max", "min", "prod") and a:
            dims = [a[0]] if a[0] is not None else None
        elif op.startswith("prims.var"):
            dims, correction = a[0], float(a[1])
        elif base == "var":
            dims = a[0] if a else kw.get("dim")
            correction = float(kw.get("correction", 1) if kw.get("correction") is not None else 1)
        else:
            dims = a[0] if a else kw.get("dim")
        if dims in (None, []):
            dims = list(range(rank))
        dims = sorted({d % max(rank, 1) for d in dims}) if rank else [0]
        kept = [d for d in range(rank) if d not in dims]
        name = f"reduce_{i}"
        body = _Body(self)
        value = body.expr(src_ref["ref"]) if src["kind"] == "expr" else body.leaf(src)
        epilogue, last = self._epilogue(i, body) if base not in ("max", "min") else ([], i)
        parts = [("", kind, self.g[last]["dtype"] or "float32")]
        if base in ("max", "min"):                          # a (values, indices) tuple
            parts = [("", kind, self.g[src_ref["ref"]]["dtype"])]
            if self.indices_used(i):                        # no kernel for indices nothing reads
                parts.append(("_idx", "arg" + base, "int64"))
        if kind == "prod":
            self.helpers.add("mul")
        # a block past the row at the problem's own shape only masks lanes: 512 only for longer rows
        own = self.at_target(src_ref["ref"], dims) if rank else None
        wide = own is None or 512 < 2 * math.prod(own) or 512 in self.params.get("BLOCK_R", ())
        self.params["BLOCK_R"] = [128, 512] if wide else [128]
        n_dims = max(rank, 1)
        perm = ", ".join(map(str, kept + dims)) + ("," if n_dims == 1 else "")
        shape_var = f"xs{i}"
        self.body.append(f"{shape_var} = {self.shape(src_ref['ref'])}")
        views = []
        for k, v in enumerate(body.leaves):
            view = f"{name}_in{k}"
            self.helpers.add("bcast")
            self.body.append(f"{view} = bcast({v['var']}, {shape_var}).permute({perm})" if rank else
                             f"{view} = bcast({v['var']}, (1,))")
            views.append(view)
        if not views:
            raise NoSeed(f"{op} reduces a constant")
        first = views[0]
        n_red = " * ".join(f"{first}.shape[{d}]" for d in range(len(kept), n_dims))
        outs = []
        for suffix, k, dtype in parts:
            self.kernels.append(templates.reduction(name + suffix, k, len(views), len(kept), len(dims),
                                                    tuple(body.lines), value, correction,
                                                    tuple(epilogue) if not suffix else (), len(body.consts)))
            var = f"t{i}{suffix}"
            shape = self.shape(i) if node["shape"] is not None else \
                "(" + "".join(f"{first}.shape[{d}], " for d in range(len(kept))) + ")"
            self.body.append(f"{var} = torch.empty({shape}, device=DEV, dtype=torch.{dtype})")
            args = [x for view in views for x in [view] + [f"{view}.stride({d})" for d in range(n_dims)]]
            args += [var, n_red] + [f"{first}.shape[{d}]" for d in range(n_dims)] + body.consts
            grid = " * ".join(f"{first}.shape[{d}]" for d in range(len(kept))) or "1"   # a product: tile_columns
            self.body.append(f"{name}{suffix}[({grid},)]({', '.join(args)}, BLOCK_R=BLOCK_R, "
                             "num_warps=num_warps)")
            outs.append({"kind": "tensor", "var": var, "rank": len(node["shape"] or kept), "contig": True,
                         "dtype": dtype, "input": False})
        keepdim = (a[1] if len(a) > 1 else kw.get("keepdim")) if base in ("max", "min") else False
        if keepdim and rank:                              # max/min(dim, keepdim=True): views with the 1 back
            for out in outs:
                self.body.append(f"{out['var']}_k = {out['var']}.unsqueeze({dims[0]})")
                out.update(var=f"{out['var']}_k", rank=rank)
        if base in ("max", "min"):
            self.vals[i] = {"kind": "tuple", "items": outs + [None] * (2 - len(outs))}
        else:
            self.vals[i] = outs[0]
        self.vals[last] = self.vals[i]

    def indices_used(self, i: int) -> bool:
        """Whether anything live reads the indices of a (values, indices) node *i* (any user but
        ``getitem(i, 0)``)."""
        return any(not (self.g[u]["op"] == "<built-in function getitem>" and self.g[u]["args"][1] == 0)
                   for u in self.users.get(i, set()) - self.dead)

    def _epilogue(self, i: int, body: "_Body") -> tuple[list[str], int]:
        """Pointwise ops right after reduction *i* that only transform its result (a mean's
        division, a norm's sqrt): fused into the reduction's store.  (lines, last node)."""
        lines, cur = [], i
        for j in range(i + 1, len(self.g)):
            if j in self.dead:
                continue
            node, other = self.g[j], self.h[j]
            base = _base(node["op"])
            refs = _refs(node.get("args")) + _refs(node.get("kwargs"))
            if base not in POINTWISE or not refs or set(refs) != {cur} or self.users.get(cur) != {j} \
                    or node["shape"] != self.g[i]["shape"] or node.get("kwargs", {}).get("rounding_mode"):
                break
            try:
                args = ["res" if isinstance(x, dict) and "ref" in x else body.const(self.num(x, y))
                        for x, y in zip(node["args"], other["args"])]
                kw = {k: body.const(self.num(v, other["kwargs"][k]))
                      for k, v in node.get("kwargs", {}).items() if k in ("alpha", "min", "max") and v is not None}
            except NoSeed:
                break
            expr = POINTWISE[base](args, kw)
            lines.append(f"res = ({expr}).to(tl.float32)" if node["dtype"] in FLOAT else f"res = {expr}")
            self.dead.add(j)
            cur = j
        return lines, cur

    def scan(self, i: int, base: str) -> None:
        node = self.g[i]
        src = self.tensor(node["args"][0])
        rank, dim = src["rank"], node["args"][1] % max(src["rank"], 1)
        perm = [d for d in range(rank) if d != dim] + [dim]
        name = f"scan_{i}"
        self.kernels.append(templates.scan(name, base, rank - 1))
        self.params.setdefault("BLOCK_L", [256, 1024])
        out = self.new(i)
        p = ", ".join(map(str, perm)) + ("," if len(perm) == 1 else "")
        self.body += [f"x{i} = {src['var']}.permute({p})", f"y{i} = {out}.permute({p})"]
        args = [f"x{i}"] + [f"x{i}.stride({d})" for d in range(rank)] + [f"y{i}"]
        args += [f"y{i}.stride({d})" for d in range(rank)] + [f"x{i}.shape[{rank - 1}]"]
        args += [f"x{i}.shape[{d}]" for d in range(rank - 1)]
        self.body.append(f"{name}[({out}.numel() // max(x{i}.shape[{rank - 1}], 1),)]({', '.join(args)}, "
                         "BLOCK_L=BLOCK_L, num_warps=num_warps)")

    def matmul(self, i: int, base: str) -> None:
        node = self.g[i]
        a, b = self.tensor(node["args"][0]), self.tensor(node["args"][1])
        if node["dtype"] not in FLOAT or node["dtype"] == "bfloat16":
            raise NoSeed(f"{node['op']} on {node['dtype']} has no template (the interpreter's bf16 dot is wrong)")
        name = f"matmul_{i}"
        self.kernels.append(templates.matmul(name, node["dtype"] == "float32"))
        for k, v in (("BLOCK_M", [32, 64]), ("BLOCK_N", [32, 64]), ("BLOCK_K", [32])):
            self.params.setdefault(k, v)
        out = self.new(i)
        if base == "mm":
            sa = f"0, {a['var']}.stride(0), {a['var']}.stride(1)"
            sb = f"0, {b['var']}.stride(0), {b['var']}.stride(1)"
            sc = f"0, {out}.stride(0), {out}.stride(1)"
            mnk = f"{a['var']}.shape[0], {b['var']}.shape[1], {a['var']}.shape[1]"
            batch = "1"
        else:
            sa = ", ".join(f"{a['var']}.stride({d})" for d in range(3))
            sb = ", ".join(f"{b['var']}.stride({d})" for d in range(3))
            sc = ", ".join(f"{out}.stride({d})" for d in range(3))
            mnk = f"{a['var']}.shape[1], {b['var']}.shape[2], {a['var']}.shape[2]"
            batch = f"{a['var']}.shape[0]"
        self.body.append(f"{name}[(triton.cdiv({out}.shape[-2], BLOCK_M), triton.cdiv({out}.shape[-1], BLOCK_N), "
                         f"{batch})]({a['var']}, {b['var']}, {out}, {mnk}, {sa}, {sb}, {sc}, BLOCK_M=BLOCK_M, "
                         "BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=num_warps)")

    def output(self, node: dict) -> None:
        names, seen = [], set()
        for k, arg in enumerate(node["args"]):
            v = self.tensor(arg)
            if v["input"] or not v["contig"] or v["var"] in seen:
                v = self.contiguous(dict(v, contig=False), 10_000 + k)
            seen.add(v["var"])
            names.append(v["var"])
        self.body.append("return " + (names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"))

    def module(self) -> str:
        if not self.kernels:
            raise NoSeed("the reference computes nothing the generator can launch")
        names = [s["name"] for s in self.inputs]
        params, configs = {}, 1
        for key, values in self.params.items():          # at most 8 kernel configs; the search grows them
            params[key] = values if configs * len(values) <= 8 else values[:1]
            configs *= len(params[key])
        params["num_warps"] = [4, 8]
        sig = ", ".join(names) + ", *, " + ", ".join(params)
        head = [f"S_{s} = {names[i]}.shape[{d}]" for s, (i, d) in self.sizes.items()]
        head.append(f"DEV = {names[0]}.device")
        note = f" Left out (outputs do not depend on them): {'; '.join(self.skipped)}." if self.skipped else ""
        lines = ['"""Generated starting kernel: one naive Triton kernel per op group of the reference '
                 f'(see docs/kernelbench.md).{note}"""',
                 "import math", "import torch", "import triton", "import triton.language as tl",
                 "from triton.language.extra import libdevice", "",
                 f"PARAMS = {params!r}", "", ""]
        if "mul" in self.helpers:
            lines += [templates.MUL_COMBINE, ""]
        lines += [k + "\n" for k in self.kernels]
        if "bcast" in self.helpers:
            lines += ["def bcast(t, shape):",
                      '    """*t* as a (stride-0) view of *shape*, NumPy broadcasting rules."""',
                      "    for _ in range(len(shape) - t.dim()):",
                      "        t = t.unsqueeze(0)",
                      "    return t.expand(shape)", "", ""]
        lines.append(f"def launch({sig}):")
        lines += [f"    {line}" for line in head + self.body]
        return "\n".join(lines) + "\n"


def _refs(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [value["ref"]] if "ref" in value else [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def generate(graphs: list[list[dict]], envs: list[dict[str, int]], inputs: list[dict],
             sizes: dict[str, tuple[int, int]], target: dict[str, int] | None = None) -> str:
    """The seed module's source; raises :class:`NoSeed` naming what it cannot express.  *target*: the
    problem's own sizes (symbol -> value), which prune block sizes no row there fills."""
    if len(graphs) != 2:
        raise NoSeed("the reference could not be traced at two shapes")
    return _Gen(graphs, envs, inputs, sizes, target).run()
