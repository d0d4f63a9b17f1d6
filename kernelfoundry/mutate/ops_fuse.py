"""Epilogue fusion: an elementwise kernel that post-processes a tiled producer's
intermediate moves into the producer.

Recognised in ``launch``: kernel P stores one 2-D tile per program to a buffer that
``launch`` allocates (``c = torch.empty((M, N), ...)``), then kernel E reads that
buffer elementwise at one flat offset ``offs`` (a 1-D block of ``M * N``) and writes
an output of the same shape; nothing else reads the buffer.  P's store

    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=MASK)

becomes E's per-element code, with the loaded buffer value replaced by P's tile
(cast to the buffer's dtype) and E's indexing re-expressed on P's tile:
``offs % N`` -> ``rn[None, :]``, ``offs // N`` -> ``rm[:, None]``, ``offs`` -> P's flat
offset, ``offs < M * N`` -> P's store mask.  E's other arguments become P's (a P
argument passed the same host value is reused).  E's launch, the buffer and the
template parameters only E used go away.  Kernels whose epilogue loops, reduces,
uses atomics or indexes the buffer any other way are left alone (``Skip``).

The buffer may also have rank > 2 (a convolution's ``(N, C, H, W)`` output stored as rows
``(n, c)`` with row stride ``c.stride(1)``): its rows are then its leading dims, and E's
splits of ``offs`` by anything but the row length stay splits of P's flat offset.  E may read
it through strides, as the KernelBench seed generator's elementwise kernels do
(:mod:`.ops_fuse_views`: such reads become flat reads first), and P's launch moves to E's
place when it comes to read names ``launch`` assigns between the two.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from .ast_module import (Skip, all_names, arg_names, fresh_name, is_call_to, is_constexpr_arg,
                         jit_functions, launch_function, loaded_names, read_params, same,
                         statement_lists, stored_names, template_expr, write_params)
from .ast_signature import add_runtime_param, call_binding, launch_calls_in_launch, pass_keyword
from .ops_base import Edit, OpContext, Operator
from .ops_fuse_buffers import _ALLOCATORS, _add_terms, _allocation, _dims, pointer_offset
from .ops_fuse_views import flat_reads, place_producer

#: Calls that make a kernel more than elementwise.
_NOT_ELEMENTWISE = ("sum", "max", "min", "reduce", "cumsum", "cumprod", "argmax", "argmin", "xor_sum",
                    "sort", "histogram", "dot", "dot_scaled", "associative_scan", "atomic_add", "atomic_max",
                    "atomic_min", "atomic_cas", "atomic_xchg", "atomic_and", "atomic_or", "atomic_xor",
                    "debug_barrier")
#: Calls that only the flat offset's definition may make.
_INDEXING = ("program_id", "num_programs", "arange")
_TL_DTYPES = {"float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
              "bfloat16": "bfloat16", "float64": "float64"}


def _call_args(call: ast.Call, names: tuple[str, ...]) -> dict[str, ast.expr]:
    """Positional and keyword arguments of a call by parameter name (``names`` in order)."""
    out = dict(zip(names, call.args))
    out.update({k.arg: k.value for k in call.keywords if k.arg})
    return out


def _tile_terms(offset: ast.expr) -> tuple[ast.expr, ast.expr | None, ast.expr, ast.expr | None]:
    """``R[:, None] * S + C[None, :] (* T)`` -> (R[:, None], S, C[None, :], T or None)."""
    if not (isinstance(offset, ast.BinOp) and isinstance(offset.op, ast.Add)):
        raise Skip("producer stores the intermediate at an offset that is not rows + columns")
    found: dict[str, tuple[ast.expr, ast.expr | None]] = {}
    for term in (offset.left, offset.right):
        factor = None
        if isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult):
            term, factor = (term.left, term.right) if isinstance(term.left, ast.Subscript) else (term.right, term.left)
        if not (isinstance(term, ast.Subscript) and isinstance(term.slice, ast.Tuple) and len(term.slice.elts) == 2):
            raise Skip("producer's store offset is not a broadcast of row and column vectors")
        first, second = term.slice.elts
        none = lambda e: isinstance(e, ast.Constant) and e.value is None  # noqa: E731
        if isinstance(first, ast.Slice) and none(second):
            found["row"] = (term, factor)
        elif none(first) and isinstance(second, ast.Slice):
            found["col"] = (term, factor)
    if set(found) != {"row", "col"}:
        raise Skip("producer's store offset is not rows[:, None] * stride + cols[None, :]")
    return (*found["row"], *found["col"])


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            return ast.copy_location(ast.Name(id=self.names[node.id], ctx=node.ctx), node)
        return node


class _Retile(ast.NodeTransformer):
    """E's flat-offset code re-expressed on P's tile."""

    def __init__(self, offs: str, masks: set[str], is_row_len, is_numel, buffer: str,
                 rows: ast.expr, cols: ast.expr, flat: ast.expr, mask: ast.expr | None, value: ast.expr):
        self.offs, self.masks, self.buffer = offs, masks, buffer
        self.is_row_len, self.is_numel = is_row_len, is_numel
        self.rows, self.cols, self.flat, self.mask, self.value = rows, cols, flat, mask, value

    def _is_offs(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == self.offs

    def _mask(self) -> ast.expr:
        if self.mask is None:
            raise Skip("the producer's store has no mask to bound the epilogue with")
        return copy.deepcopy(self.mask)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if is_call_to(node, "load") and node.args and self.buffer in loaded_names(node.args[0]):
            return copy.deepcopy(self.value)
        return self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        if self._is_offs(node.left) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Lt):
            if not self.is_numel(node.comparators[0]):
                raise Skip("epilogue bounds its offsets by something other than the intermediate's size")
            return self._mask()
        return self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if self._is_offs(node.left) and isinstance(node.op, (ast.Mod, ast.FloorDiv)) and self.is_row_len(node.right):
            return copy.deepcopy(self.cols if isinstance(node.op, ast.Mod) else self.rows)
        return self.generic_visit(node)      # any other split of offs: of P's flat offset, the same value

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.masks:
            return self._mask()
        if node.id == self.offs:
            return copy.deepcopy(self.flat)
        return node


def _shape(call: ast.Call) -> list[ast.expr]:
    shape = call.args[0]
    if isinstance(shape, (ast.Tuple, ast.List)) and len(shape.elts) == 2:
        return list(shape.elts)
    raise Skip("intermediate is not allocated with a literal 2-D shape")


def _product(dims: list[ast.expr]) -> ast.expr:
    out = dims[0]
    for d in dims[1:]:
        out = ast.BinOp(left=out, op=ast.Mult(), right=d)
    return out


def _check_elementwise(fn: ast.FunctionDef, offs_stmt: ast.stmt | None) -> None:
    """Skip unless *fn* is straight-line code without reductions (and, once the flat
    offset's statement is known, without other program-id or arange indexing)."""
    for stmt in fn.body:
        if isinstance(stmt, (ast.For, ast.While, ast.If, ast.Return, ast.With)):
            raise Skip(f"epilogue kernel {fn.name} loops or branches: not elementwise")
        calls = _NOT_ELEMENTWISE if offs_stmt is None else _INDEXING
        for node in ast.walk(stmt if stmt is not offs_stmt else ast.Pass()):
            if is_call_to(node, *calls) or any(k.arg == "axis" for k in getattr(node, "keywords", [])):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else ast.unparse(node.func)
                raise Skip(f"epilogue kernel {fn.name} calls {name}: not elementwise")


@dataclass
class Intermediate:
    """A buffer that ``launch`` allocates with shape (M, N), that producer P writes with one
    row-major tile store and that consumer E reads; nothing else in ``launch`` uses it."""

    host: str                          # launch's name for the buffer
    p_param: str                       # its parameter in P
    e_param: str                       # its parameter in E
    alloc_stmt: ast.stmt
    alloc: ast.Call
    shape: list[ast.expr]              # (M, N) as launch writes them
    p_bind: dict[str, ast.expr]        # P's parameters -> host expressions
    e_bind: dict[str, ast.expr]
    store_body: list[ast.stmt]         # the statement list holding P's store, and its index
    store_index: int
    value: ast.expr                    # the stored tile
    mask: ast.expr | None              # the store's mask
    rows: ast.expr                     # rows[:, None]
    cols: ast.expr                     # cols[None, :]
    offset: ast.expr                   # rows[:, None] * N + cols[None, :]
    dims: list[ast.expr] | None = None  # the buffer's full shape (rank >= 2; (M, N) when 2-D)
    split: int = 1                     # rows are dims[:split], a row is dims[split:]


def host_is(expr: ast.expr | None, binding: dict[str, ast.expr], *choices: str) -> bool:
    """True when *expr* is a parameter passed one of the host expressions *choices*."""
    h = binding.get(expr.id) if isinstance(expr, ast.Name) else None
    return h is not None and any(same(h, ast.parse(c, mode="eval").body) for c in choices)


def shared_intermediate(tree: ast.Module, producer: str, p_call: ast.Call, consumer: str,
                        e_call: ast.Call, nd: bool = False) -> Intermediate:
    """The intermediate P stores as a row-major tile and E reads; Skip when there is none.

    With *nd* the buffer may have any rank r >= 2: P's rows are then its first ``split`` dims
    and its columns the rest (P's row stride is ``buffer.stride(split - 1)`` or the product of
    the trailing dims), and ``shape`` holds the two products."""
    kernels = jit_functions(tree)
    p_fn, e_fn = kernels[producer], kernels[consumer]
    launch = launch_function(tree)
    p_bind, e_bind = call_binding(p_call, p_fn), call_binding(e_call, e_fn)
    shared = [(pp, ep, v.id) for pp, v in p_bind.items() for ep, w in e_bind.items()
              if isinstance(v, ast.Name) and same(v, w)]
    host_buffers = [h for _, _, h in shared if h in {s.targets[0].id for s in launch.body
                                                     if isinstance(s, ast.Assign) and len(s.targets) == 1
                                                     and isinstance(s.targets[0], ast.Name)
                                                     and is_call_to(s.value, *_ALLOCATORS)}]
    if len(host_buffers) != 1:
        raise Skip(f"{producer} and {consumer} do not share exactly one buffer allocated in launch()")
    host_c = host_buffers[0]
    p_param, e_param, _ = next(t for t in shared if t[2] == host_c)
    alloc_stmt, alloc = _allocation(launch, host_c)
    dims = _dims(alloc) if nd else _shape(alloc)
    host_uses = [n for n in ast.walk(launch) if isinstance(n, ast.Name) and n.id == host_c]
    in_calls = [n for call in (p_call, e_call) for n in ast.walk(call) if isinstance(n, ast.Name) and n.id == host_c]
    if len(host_uses) != len(in_calls) + 1:
        raise Skip(f"{host_c} is used in launch() beyond {producer} writing it and {consumer} reading it")

    # The producer's one store of the tile.
    p_uses = [n for n in ast.walk(p_fn) if isinstance(n, ast.Name) and n.id == p_param]
    stores = [(body, i, s) for body in statement_lists(p_fn) for i, s in enumerate(body)
              if isinstance(s, ast.Expr) and is_call_to(s.value, "store")
              and p_param in loaded_names(s.value.args[0] if s.value.args else s.value)]
    if len(stores) != 1 or len(p_uses) != 1:
        raise Skip(f"{producer} uses {p_param} other than in one tl.store")
    p_body, p_index, p_store = stores[0]
    store_args = _call_args(p_store.value, ("pointer", "value", "mask"))
    p_offset = pointer_offset(store_args.get("pointer"), p_param) if "pointer" in store_args else None
    if p_offset is None or "value" not in store_args:
        raise Skip(f"{producer} stores {p_param} at an address that is not {p_param} + offset")
    rows, row_stride, cols, col_stride = _tile_terms(p_offset)
    rank = len(dims)
    splits = [k for k in range(1, rank) if host_is(
        row_stride, p_bind, ast.unparse(_product(dims[k:])), f"{host_c}.stride({k - 1})",
        *([f"{host_c}.shape[1]"] if rank == 2 else []))]
    last = f"{host_c}.stride({rank - 1})"
    if not (splits and (col_stride is None or (isinstance(col_stride, ast.Constant) and col_stride.value == 1)
                        or host_is(col_stride, p_bind, last))):
        raise Skip(f"{producer} does not store {host_c} row-major with its row length as stride")
    k = splits[0]
    c_shape = [_product(dims[:k]), _product(dims[k:])]
    return Intermediate(host_c, p_param, e_param, alloc_stmt, alloc, c_shape, p_bind, e_bind, p_body, p_index,
                        store_args["value"], store_args.get("mask"), rows, cols, p_offset, dims, k)


def stored_value(p_fn: ast.FunctionDef, inter: Intermediate) -> ast.expr:
    """P's stored tile as the consumer would load it: cast to the buffer's dtype."""
    dtype = next((k.value for k in inter.alloc.keywords if k.arg == "dtype"), None)
    value = copy.deepcopy(inter.value)
    if isinstance(dtype, ast.Attribute) and isinstance(dtype.value, ast.Name) and dtype.value.id == "torch" \
            and dtype.attr in _TL_DTYPES:
        if not (_TL_DTYPES[dtype.attr] == "float32" and _is_fp32_accumulator(p_fn, inter.value)):
            value = template_expr(f"V.to(tl.{_TL_DTYPES[dtype.attr]})", V=value)
    elif isinstance(dtype, ast.Attribute) and dtype.attr == "dtype" and isinstance(dtype.value, ast.Name):
        source = next((p for p, v in inter.p_bind.items() if same(v, dtype.value)), None)
        if source is None:
            raise Skip(f"cannot name the intermediate's dtype {ast.unparse(dtype)} inside {p_fn.name}")
        value = template_expr(f"V.to({source}.dtype.element_ty)", V=value)
    else:
        raise Skip("intermediate's dtype is not a literal torch dtype or an input's dtype")
    return value


def _fuse(tree: ast.Module, producer: str, p_call: ast.Call, consumer: str, e_call: ast.Call,
          e_stmt: ast.stmt) -> str:
    kernels = jit_functions(tree)
    p_fn, e_fn = kernels[producer], kernels[consumer]
    launch = launch_function(tree)
    flat_reads(tree, p_call, consumer, e_call)
    inter = shared_intermediate(tree, producer, p_call, consumer, e_call, nd=True)
    host_c, p_param, e_param, c_shape = inter.host, inter.p_param, inter.e_param, inter.shape
    alloc_stmt, alloc, p_bind, e_bind = inter.alloc_stmt, inter.alloc, inter.p_bind, inter.e_bind
    p_body, p_index, p_mask, p_offset = inter.store_body, inter.store_index, inter.mask, inter.offset
    rows, cols = inter.rows, inter.cols
    row_len = ast.unparse(c_shape[1])
    numel = ast.unparse(ast.BinOp(left=c_shape[0], op=ast.Mult(), right=c_shape[1]))

    # The epilogue: straight-line code over one flat offset.
    _check_elementwise(e_fn, None)
    e_uses = [n for n in ast.walk(e_fn) if isinstance(n, ast.Name) and n.id == e_param]
    loads = [n for n in ast.walk(e_fn) if is_call_to(n, "load") and n.args
             and e_param in loaded_names(n.args[0])]
    if len(e_uses) != 1 or len(loads) != 1:
        raise Skip(f"{consumer} uses {e_param} other than in one tl.load")
    address = pointer_offset(loads[0].args[0], e_param)
    if not isinstance(address, ast.Name):
        raise Skip(f"{consumer} does not read {e_param} at one flat offset")
    offs = address.id
    offs_defs = [s for s in e_fn.body if isinstance(s, ast.Assign) and offs in stored_names(s)]
    if len(offs_defs) != 1 or sum(offs in stored_names(s) for s in e_fn.body) != 1 \
            or not any(is_call_to(n, "program_id") for n in ast.walk(offs_defs[0].value)):
        raise Skip(f"{consumer}'s offset {offs} is not computed once from the program id")
    _check_elementwise(e_fn, offs_defs[0])
    doc = e_fn.body[0] if isinstance(e_fn.body[0], ast.Expr) and isinstance(e_fn.body[0].value, ast.Constant) else None
    masks = {s.targets[0].id for s in e_fn.body if isinstance(s, ast.Assign) and len(s.targets) == 1
             and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Compare)
             and isinstance(s.value.left, ast.Name) and s.value.left.id == offs}
    if any(sum(m in stored_names(s) for s in e_fn.body) != 1 for m in masks):
        raise Skip(f"{consumer} reassigns its mask")
    body = [s for s in e_fn.body if s is not doc and s is not offs_defs[0]
            and not (stored_names(s) & masks and isinstance(s, ast.Assign))]
    outputs = [s.value for s in body if isinstance(s, ast.Expr) and is_call_to(s.value, "store")]
    if not outputs or any(not isinstance(s, (ast.Assign, ast.AugAssign, ast.Expr)) for s in body):
        raise Skip(f"{consumer} stores nothing or has statements other than assignments and stores")
    e_host_outputs = []
    for out in outputs:
        ptr = out.args[0] if out.args else None
        bases = [t.id for t in _add_terms(ptr) if isinstance(t, ast.Name) and t.id in e_bind] if ptr else []
        offset = pointer_offset(ptr, bases[0]) if len(bases) == 1 else None
        if not (isinstance(offset, ast.Name) and offset.id == offs and isinstance(e_bind[bases[0]], ast.Name)):
            raise Skip(f"{consumer} stores somewhere other than an output at the flat offset")
        out_name = e_bind[bases[0]].id
        _, out_alloc = _allocation(launch, out_name)
        out_dims = _dims(out_alloc)
        if len(out_dims) != len(inter.dims) or not all(same(a, b) for a, b in zip(out_dims, inter.dims)):
            raise Skip(f"output {out_name} does not have the intermediate's shape")
        e_host_outputs.append(out_name)

    value = stored_value(p_fn, inter)   # the tile value E would have loaded

    # Rename E's names into P's namespace: locals that clash get fresh names, arguments map
    # onto P's arguments passed the same host value or become new P arguments.
    taken = all_names(tree)
    p_names = all_names(p_fn)
    rename: dict[str, str] = {}
    for name in sorted(set().union(*(stored_names(s) for s in body))):
        if name in p_names:
            rename[name] = fresh_name(taken, name)
    e_args = {a.arg: a for a in e_fn.args.args}
    fresh_args: dict[str, tuple[ast.expr, bool]] = {}
    for name in sorted(set().union(*(loaded_names(s) for s in body)) & set(e_args) - {offs, e_param}):
        host_value = e_bind.get(name)
        if host_value is None:
            raise Skip(f"{consumer}'s argument {name} is not passed at its launch")
        reuse = next((p for p, v in p_bind.items() if same(v, host_value)), None)
        if reuse is not None:
            rename[name] = reuse
        else:
            rename[name] = name if name not in p_names and name not in rename.values() else fresh_name(taken, name)
            fresh_args[rename[name]] = (host_value, is_constexpr_arg(e_args[name]))
    body = [_Rename(rename).visit(copy.deepcopy(s)) for s in body]
    original = {v: k for k, v in rename.items()}

    def e_host(expr: ast.expr) -> ast.expr:   # an expression of the renamed body, in E's own names
        return _Rename(original).visit(copy.deepcopy(expr))

    two_d = [f"{host_c}.shape[1]"] if len(inter.dims) == 2 else []

    def is_row_len(expr: ast.expr) -> bool:
        return host_is(e_host(expr), e_bind, row_len, *two_d, f"{host_c}.stride({inter.split - 1})")

    def is_numel(expr: ast.expr) -> bool:
        return host_is(e_host(expr), e_bind, numel, ast.unparse(_product(inter.dims)), f"{host_c}.numel()",
                       *(f"{out}.numel()" for out in e_host_outputs))

    body = [_Retile(offs, masks, is_row_len, is_numel, e_param, rows, cols, p_offset, p_mask, value).visit(s)
            for s in body]
    still_read = set().union(*(loaded_names(s) for s in body))
    if offs in still_read:
        raise Skip(f"{consumer} uses {offs} in a way that cannot be re-tiled")
    new_args = [(name, h, cx) for name, (h, cx) in fresh_args.items() if name in still_read]
    p_body[p_index:p_index + 1] = body

    # P's signature and launch: the buffer argument goes, E's arguments come in.
    index = arg_names(p_fn).index(p_param)
    del p_fn.args.args[index]
    for call in launch_calls_in_launch(tree, producer):
        if index < len(call.args):
            del call.args[index]
        call.keywords = [k for k in call.keywords if k.arg != p_param]
        _Rename({host_c: e_host_outputs[0]}).visit(call)
    for name, host_value, constexpr in new_args:
        calls = launch_calls_in_launch(tree, producer)
        if constexpr:
            ann = ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="constexpr", ctx=ast.Load())
            p_fn.args.args.append(ast.arg(arg=name, annotation=ann))
        else:
            add_runtime_param(tree, producer, name, calls)
        pass_keyword(calls, name, host_value)

    # launch(): E's launch and the buffer go (P launches where E did when it now reads names
    # launch assigns in between); so do template parameters nothing reads any more.
    place_producer(tree, p_call, e_stmt)
    launch.body = [s for s in launch.body if s is not e_stmt and s is not alloc_stmt]
    tree.body = [s for s in tree.body if s is not e_fn] if not still_used(tree, consumer) else tree.body
    space = read_params(tree)
    dropped = [name for name in space if name not in ("num_warps", "num_stages")
               and name not in loaded_names(launch)]
    for name in dropped:
        del space[name]
    keep = [i for i, a in enumerate(launch.args.kwonlyargs) if a.arg not in dropped]
    launch.args.kwonlyargs = [launch.args.kwonlyargs[i] for i in keep]
    launch.args.kw_defaults = [launch.args.kw_defaults[i] for i in keep]
    write_params(tree, space)
    gone = f"; {', '.join(dropped)} dropped" if dropped else ""
    return (f"{consumer}'s elementwise epilogue fused into {producer}: it stores to "
            f"{', '.join(e_host_outputs)} directly, the intermediate {host_c} is gone{gone}")


def _is_fp32_accumulator(fn: ast.FunctionDef, value: ast.expr) -> bool:
    """True when *value* names a ``tl.zeros(..., dtype=tl.float32)`` accumulator of *fn*."""
    if not isinstance(value, ast.Name):
        return False
    inits = [s.value for s in ast.walk(fn) if isinstance(s, ast.Assign) and len(s.targets) == 1
             and isinstance(s.targets[0], ast.Name) and s.targets[0].id == value.id]
    return len(inits) == 1 and is_call_to(inits[0], "zeros", "full") and any(
        k.arg == "dtype" and ast.unparse(k.value) == "tl.float32" for k in inits[0].keywords)


def still_used(tree: ast.Module, kernel: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == kernel for s in tree.body
               if not (isinstance(s, ast.FunctionDef) and s.name == kernel) for n in ast.walk(s))


def launch_statements(launch: ast.FunctionDef, kernels: dict[str, ast.FunctionDef]) -> list[tuple[ast.stmt, ast.Call, str]]:
    out = []
    for stmt in launch.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript) \
                and isinstance(call.func.value, ast.Name) and call.func.value.id in kernels:
            out.append((stmt, call, call.func.value.id))
    return out


def fuse_pairs(ctx: OpContext, fuse) -> Edit:
    """The first edit ``fuse(tree, producer, p_call, consumer, e_call, e_stmt)`` makes for a
    pair of different kernels that ``launch`` runs in that order; Skip with every reason."""
    reasons = []
    base = ctx.module.clone()
    sites = launch_statements(launch_function(base), jit_functions(base))
    pairs = [(i, j) for i in range(len(sites)) for j in range(i + 1, len(sites)) if sites[i][2] != sites[j][2]]
    for i, j in pairs:
        tree = ctx.module.clone()
        found = launch_statements(launch_function(tree), jit_functions(tree))
        (_, p_call, producer), (e_stmt, e_call, consumer) = found[i], found[j]
        try:
            description = fuse(tree, producer, p_call, consumer, e_call, e_stmt)
        except Skip as exc:
            reasons.append(f"{consumer} into {producer}: {exc}")
            continue
        return Edit(tree, description)
    raise Skip("; ".join(reasons) or "launch() runs fewer than two different kernels")


def fuse_epilogue(ctx: OpContext) -> Edit:
    """Move an elementwise epilogue kernel into the tiled kernel that produces its input."""
    return fuse_pairs(ctx, _fuse)


OPERATORS = (Operator("fuse_epilogue", "mutate", 3.0, fuse_epilogue),)
