"""2-D tiling of kernels whose programs each own one scalar index of a strided access.

A program that handles one index ``i`` (a row, a column) and a vector of offsets along
the other axis, where some load or store adds ``i`` unscaled (``i`` is the contiguous
axis of that tensor) and multiplies the vector by a stride, touches one element per
32-byte sector in that access.  Giving each program ``BLOCK`` consecutive values of
``i`` turns the vector into a 2-D tile: the strided access now moves whole sectors.

* ``tile_columns``: ``pid = tl.program_id(0); o = pid // n; c = pid % n`` (or
  ``pid - o * n``) and a column walked with stride ``n`` (a reduction over the middle
  axis).  ``c`` becomes ``cdiv(n, BLOCK_C)`` blocks of ``BLOCK_C`` columns, the existing
  vector stays on axis 0 (reductions keep ``axis=0``), columns go on axis 1, and the
  grid ``outer * n`` becomes ``outer * cdiv(n, BLOCK_C)``.
* ``tile_2d``: ``i = tl.program_id(a)`` on a grid whose axis ``a`` is a kernel argument
  ``m`` (a transpose: one row segment per program, stored down a column).  ``i``
  becomes ``BLOCK_M`` rows on axis 0, the existing vector goes to axis 1 and grid axis
  ``a`` becomes ``cdiv(m, BLOCK_M)``.

Both rewrite the kernel the same way (:class:`_Tiler`): every value is classed as
scalar, along the old vector axis, along the new axis, or both; where the two axes
meet, operands are broadcast with ``[:, None]`` / ``[None, :]``, accumulators
initialised as 1-D ``tl.zeros``/``tl.full`` (or a scalar constant) get the 2-D (or
new-axis) shape, reductions over the old axis name it, and every load and store that
varies along the new axis is masked with ``index < bound``.  Kernels that already use
2-D tiles, ``tl.dot``, shape ops, scans, atomics or early returns are left alone.
"""

from __future__ import annotations

import ast
import copy

from .ast_module import (Skip, all_names, fresh_name, is_call_to, is_constexpr_arg, jit_functions, launched_kernels,
                         program_id_axis, read_params, same, stored_names, template, template_expr, write_params)
from .ast_signature import add_template_param, call_binding, grid_dims, grid_site, launch_calls_in_launch
from .ops_base import Edit, OpContext, Operator, fit_space
from .ops_rows import one_d_launch_sites

COLUMN_BLOCKS = [64, 32, 128, 256]
ROW_BLOCKS = [64, 32, 128]

OLD, NEW = 1, 2            # kind bits: along the kernel's vector axis, along the tiled index
BOTH = OLD | NEW

_REDUCTIONS = ("sum", "max", "min", "argmax", "argmin", "xor_sum")
_PASS_THROUGH = ("multiple_of", "max_contiguous", "max_constancy")
_REFUSED = ("dot", "dot_scaled", "trans", "permute", "reshape", "view", "broadcast_to", "broadcast", "expand_dims",
            "join", "split", "interleave", "cumsum", "cumprod", "associative_scan", "reduce", "sort", "flip",
            "gather", "histogram", "make_tensor_descriptor", "load_tensor_descriptor",
            "store_tensor_descriptor", "num_programs", "atomic_add", "atomic_max", "atomic_min", "atomic_cas",
            "atomic_xchg", "atomic_and", "atomic_or", "atomic_xor", "device_print", "static_print", "print",
            "device_assert", "static_assert", "debug_barrier", "inline_asm_elementwise")
_MODULES = ("tl", "triton", "libdevice", "math")


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_module_call(node: ast.Call) -> bool:
    """``tl.x(...)`` / ``tl.math.x(...)`` rather than a method of a value (``v.to(...)``)."""
    f = node.func
    while isinstance(f, ast.Attribute):
        f = f.value
    return isinstance(f, ast.Name) and f.id in _MODULES


def _arg(node: ast.Call, index: int, name: str) -> ast.expr | None:
    if len(node.args) > index:
        return node.args[index]
    return next((k.value for k in node.keywords if k.arg == name), None)


def _set_arg(node: ast.Call, index: int, name: str, value: ast.expr) -> None:
    if len(node.args) > index:
        node.args[index] = value
        return
    for k in node.keywords:
        if k.arg == name:
            k.value = value
            return
    node.keywords.append(ast.keyword(arg=name, value=value))


class _Tiler:
    """Rewrites kernel *fn* in place once its tiled index (a name of kind NEW) is set up.

    *fixed* are statements already written for the new index (left as they are); *index*
    the name holding the new axis' indices, *index_mask* its bound mask; *pos_old* the
    tile axis (0 or 1) of the kernel's existing vector; *new_block* the new constexpr.
    """

    def __init__(self, fn: ast.FunctionDef, fixed: list[ast.stmt], index: str, index_mask: str, pos_old: int,
                 new_block: str):
        self.fn, self.fixed = fn, {id(s) for s in fixed}
        self.index, self.index_mask, self.pos_old, self.new_block = index, index_mask, pos_old, new_block
        self.kinds: dict[str, int] = {index: NEW, index_mask: NEW}
        self.old_block: ast.expr | None = None

    # ------------------------------------------------------------------ kinds
    def kind(self, node: ast.AST) -> int:
        if isinstance(node, ast.Name):
            return self.kinds.get(node.id, 0)
        if isinstance(node, (ast.Constant, ast.Attribute)):
            return 0
        if isinstance(node, ast.Subscript):
            raise Skip("kernel already indexes tensors (a 2-D tile or a slice)")
        if isinstance(node, (ast.BinOp, ast.BoolOp, ast.Compare, ast.UnaryOp, ast.IfExp)):
            out = 0
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    out |= self.kind(child)
            return out
        if isinstance(node, ast.Call):
            return self._call_kind(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            if any(self.kind(e) for e in node.elts):
                raise Skip("a tuple of tensors")
            return 0
        raise Skip(f"unsupported expression {type(node).__name__}")

    def _call_kind(self, node: ast.Call) -> int:
        name = _call_name(node)
        args = [*node.args, *(k.value for k in node.keywords)]
        if name in _REFUSED:
            raise Skip(f"kernel uses tl.{name}")
        if name == "arange":
            self._old_block(node.args[-1] if node.args else None)
            return OLD
        if name in ("zeros", "full"):
            shape = _arg(node, 0, "shape")
            if not isinstance(shape, (ast.List, ast.Tuple)) or len(shape.elts) != 1:
                raise Skip("an accumulator that is not 1-D")
            self._old_block(shape.elts[0])
            return OLD
        if name in _REDUCTIONS:
            k = self.kind(_arg(node, 0, "input"))
            axis = _arg(node, 1, "axis")
            if axis is not None and not (isinstance(axis, ast.Constant) and axis.value in (0, -1, None)):
                raise Skip(f"tl.{name} over an axis other than 0")
            if any(kw.arg == "keep_dims" for kw in node.keywords):
                raise Skip(f"tl.{name} with keep_dims")
            if not k & OLD:
                raise Skip(f"tl.{name} of a value that is not a vector")
            return k & NEW
        if not _is_module_call(node):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "to":
                return self.kind(f.value)
            if isinstance(f, ast.Attribute) and f.attr in _REDUCTIONS:
                raise Skip(f"method reduction .{f.attr}()")
            if any(self.kind(a) for a in args):
                raise Skip(f"call of {ast.unparse(f)} on tensors")
            return 0
        if name in ("program_id", "cdiv"):
            return 0
        if name == "load":
            return self.kind(node.args[0] if node.args else _arg(node, 0, "pointer")) | \
                self.kind(_arg(node, 1, "mask") or ast.Constant(None)) | self.kind(_arg(node, 2, "other") or
                                                                              ast.Constant(None))
        out = 0
        for a in args:
            out |= self.kind(a)
        return out

    def _old_block(self, size: ast.expr | None) -> None:
        if size is None:
            raise Skip("tl.arange without a size")
        if self.old_block is None:
            self.old_block = size
        elif not same(self.old_block, size):
            raise Skip("vectors of two different sizes")

    def infer(self) -> None:
        """Each assigned name's kind: the union over all its assignments, to a fixed point."""
        changed = True
        while changed:
            changed = False
            for node in ast.walk(self.fn):
                if isinstance(node, ast.stmt) and id(node) in self.fixed:
                    continue
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                        raise Skip("assignment to something other than one name")
                    if node.value is None:
                        continue
                    k = self.kind(node.value) | (self.kind(targets[0]) if isinstance(node, ast.AugAssign) else 0)
                    name = targets[0].id
                    if k | self.kinds.get(name, 0) != self.kinds.get(name, 0):
                        self.kinds[name] = k | self.kinds.get(name, 0)
                        changed = True
                elif isinstance(node, ast.For):
                    if not isinstance(node.target, ast.Name) or self.kind(node.iter):
                        raise Skip("a loop that is not over scalars")
                elif isinstance(node, (ast.If, ast.While)):
                    if self.kind(node.test):
                        raise Skip("a branch on a tensor condition")
                elif isinstance(node, (ast.Return, ast.Assert, ast.With, ast.Try, ast.FunctionDef)) \
                        and node is not self.fn:
                    raise Skip(f"kernel has a {type(node).__name__} statement")

    # ------------------------------------------------------------------ rewriting
    def _spread(self, node: ast.expr, k: int) -> ast.expr:
        """A 1-D value of kind *k* as a 2-D operand: its axis kept, the other of size 1."""
        on_axis0 = (k == OLD) == (self.pos_old == 0)
        index = "[:, None]" if on_axis0 else "[None, :]"
        return template_expr(f"V{index}", V=node)

    def _fit(self, node: ast.expr, k: int, target: int) -> ast.expr:
        if target == BOTH and k in (OLD, NEW):
            return self._spread(node, k)
        return node

    def rewrite(self, node: ast.expr) -> ast.expr:
        """*node* with operands broadcast where axes meet (children first)."""
        if isinstance(node, ast.Call):
            return self._rewrite_call(node)
        if isinstance(node, (ast.BinOp, ast.BoolOp, ast.Compare, ast.UnaryOp, ast.IfExp)):
            target = self.kind(node)
            for field, value in ast.iter_fields(node):
                if isinstance(value, ast.expr):
                    setattr(node, field, self._fit(self.rewrite(value), self.kind(value), target))
                elif isinstance(value, list):
                    setattr(node, field, [self._fit(self.rewrite(v), self.kind(v), target)
                                          if isinstance(v, ast.expr) else v for v in value])
        return node

    def _rewrite_call(self, node: ast.Call) -> ast.expr:
        name = _call_name(node)
        if not _is_module_call(node):
            if isinstance(node.func, ast.Attribute):
                node.func.value = self.rewrite(node.func.value)
            return node
        if name in ("load", "store"):
            return self._rewrite_access(node, name)
        if name in _REDUCTIONS:
            src = _arg(node, 0, "input")
            if self.kind(src) == BOTH:
                node.args, node.keywords = [self.rewrite(src), ast.Constant(self.pos_old)], \
                    [k for k in node.keywords if k.arg not in ("input", "axis")]
            return node
        if name in ("zeros", "full", "arange"):
            return node
        target = self.kind(node)
        node.args = [self._fit(self.rewrite(a), self.kind(a), target) for a in node.args]
        for k in node.keywords:
            k.value = self._fit(self.rewrite(k.value), self.kind(k.value), target)
        return node

    def _rewrite_access(self, node: ast.Call, name: str) -> ast.expr:
        pointer = _arg(node, 0, "pointer")
        pk = self.kind(pointer)
        mask = _arg(node, 2 if name == "store" else 1, "mask")
        if pk & NEW:
            bound = ast.Name(id=self.index_mask, ctx=ast.Load())
            mask = bound if mask is None else ast.BinOp(left=mask, op=ast.BitAnd(), right=bound)
        extra = [("mask", 2 if name == "store" else 1, mask)]
        extra.append(("value", 1, _arg(node, 1, "value")) if name == "store" else ("other", 2, _arg(node, 2, "other")))
        _set_arg(node, 0, "pointer", self.rewrite(pointer))
        for field, index, value in extra:
            if value is None:
                continue
            k = self.kind(value)
            if k & ~pk and pk != BOTH:
                raise Skip(f"tl.{name} whose {field} varies along an axis its pointer does not")
            _set_arg(node, index, field, self._fit(self.rewrite(value), k, pk))
        return node

    def _reshape_init(self, stmt: ast.Assign, want: int) -> None:
        """Give an accumulator's initial value the shape its later updates have."""
        value = stmt.value
        have = self.kind(value)
        if isinstance(value, ast.Call) and _call_name(value) in ("zeros", "full") and have == OLD and want == BOTH:
            shape = _arg(value, 0, "shape")
            new = ast.Name(id=self.new_block, ctx=ast.Load())
            shape.elts = [shape.elts[0], new] if self.pos_old == 0 else [new, shape.elts[0]]
        elif isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and not \
                isinstance(value.value, bool) and have == 0 and want == NEW:
            dtype = "tl.float32" if isinstance(value.value, float) else "tl.int32"
            stmt.value = template_expr(f"tl.full([B], V, {dtype})", B=self.new_block, V=value)
        else:
            raise Skip(f"{ast.unparse(stmt.targets[0])} changes shape between assignments")

    def apply(self) -> None:
        self.infer()
        for node in list(ast.walk(self.fn)):
            if not isinstance(node, ast.stmt) or id(node) in self.fixed:
                continue
            if isinstance(node, ast.Assign):
                want = self.kinds.get(node.targets[0].id, 0)
                if self.kind(node.value) != want:
                    self._reshape_init(node, want)
                node.value = self.rewrite(node.value)
            elif isinstance(node, ast.AugAssign):
                want = self.kinds.get(node.target.id, 0)
                k = self.kind(node.value)
                if k & ~want:
                    raise Skip(f"{node.target.id} changes shape between assignments")
                node.value = self._fit(self.rewrite(node.value), k, want)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                node.value = self.rewrite(node.value)


# ----------------------------------------------------------------------------- strided access check

def _single_definitions(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    counts: dict[str, int] = {}
    defs: dict[str, ast.expr] = {}
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.For)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        counts[n.id] = counts.get(n.id, 0) + 1
                        if isinstance(node, ast.Assign):
                            defs[n.id] = node.value
    return {k: v for k, v in defs.items() if counts[k] == 1}


def _occurrences(expr: ast.expr, index: set[str], defs: dict[str, ast.expr], scaled: bool = False,
                 depth: int = 0, unit: str | None = None) -> set[tuple[str, bool]]:
    """('index' | 'vector', scaled) for each way *expr* depends on the index or a tl.arange.
    A product with the argument *unit* (a stride the caller passes, possibly 1) does not scale."""
    if depth > 12:
        return set()
    if isinstance(expr, ast.Name):
        if expr.id in index:
            return {("index", scaled)}
        if expr.id in defs:
            return _occurrences(defs[expr.id], index, defs, scaled, depth + 1, unit)
        return set()
    if isinstance(expr, ast.Call) and _call_name(expr) == "arange":
        return {("vector", scaled)}
    out: set[tuple[str, bool]] = set()
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        for side, other in ((expr.left, expr.right), (expr.right, expr.left)):
            by_unit = isinstance(other, ast.Name) and other.id == unit
            out |= _occurrences(side, index, defs, scaled or not (isinstance(other, ast.Constant) or by_unit),
                                depth + 1, unit)
        return out
    if isinstance(expr, ast.Call):
        through = _call_name(expr) in _PASS_THROUGH or (isinstance(expr.func, ast.Attribute)
                                                        and expr.func.attr == "to")
        parts = [expr.args[0]] if through and expr.args else list(expr.args)
        if through and isinstance(expr.func, ast.Attribute) and expr.func.attr == "to":
            parts = [expr.func.value]
        for p in parts:
            out |= _occurrences(p, index, defs, scaled or not through, depth + 1, unit)
        return out
    nonlinear = isinstance(expr, ast.BinOp) and not isinstance(expr.op, (ast.Add, ast.Sub))
    for child in ast.iter_child_nodes(expr):
        if isinstance(child, ast.expr):
            out |= _occurrences(child, index, defs, scaled or nonlinear, depth + 1, unit)
    return out


def _has_strided_access(fn: ast.FunctionDef, index: set[str]) -> bool:
    """Some load/store adds the index unscaled, or times a stride argument (a generated kernel takes every
    stride as an argument: 1 for the contiguous axis), and multiplies the vector offsets by a stride."""
    defs = _single_definitions(fn)
    units = [None] + [a.arg for a in fn.args.args if not is_constexpr_arg(a)]
    for node in ast.walk(fn):
        if is_call_to(node, "load", "store") and (node.args or node.keywords):
            for unit in units:
                occ = _occurrences(_arg(node, 0, "pointer"), index, defs, unit=unit)
                if ("index", False) in occ and ("vector", True) in occ and ("vector", False) not in occ:
                    return True
    return False


# ----------------------------------------------------------------------------- the operators

def _body_start(fn: ast.FunctionDef) -> int:
    first = fn.body[0] if fn.body else None
    return 1 if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else 0


def _assigned_once(fn: ast.FunctionDef, name: str) -> bool:
    return sum(1 for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name
               and not isinstance(n.ctx, ast.Load)) == 1


def _top_assign(fn: ast.FunctionDef, test) -> tuple[int, ast.Assign] | None:
    for i, stmt in enumerate(fn.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and test(stmt.value):
            return i, stmt
    return None


def _product_factors(expr: ast.expr) -> list[ast.expr]:
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        return _product_factors(expr.left) + _product_factors(expr.right)
    return [expr]


def _finish(tree: ast.Module, kernel: str, block: str, values: list[int], ctx: OpContext) -> None:
    add_template_param(tree, kernel, block, values)
    write_params(tree, fit_space(read_params(tree), block, ctx.rng))


def _column_decomposition(fn: ast.FunctionDef) -> tuple[str, str, str, str] | str:
    """(pid, outer, column, n) of ``pid = tl.program_id(0); outer = pid // n; column = pid % n``."""
    found = _top_assign(fn, lambda v: program_id_axis(v) == 0)
    if found is None:
        return "does not bind tl.program_id(0) to a name"
    pid = found[1].targets[0].id
    runtime = {a.arg for a in fn.args.args if not is_constexpr_arg(a)}
    div = _top_assign(fn, lambda v: isinstance(v, ast.BinOp) and isinstance(v.op, ast.FloorDiv)
                      and isinstance(v.left, ast.Name) and v.left.id == pid and isinstance(v.right, ast.Name)
                      and v.right.id in runtime)
    if div is None:
        return f"does not split {pid} with // n"
    outer, n = div[1].targets[0].id, div[1].value.right.id

    def is_column(v: ast.expr) -> bool:
        mod = isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mod) and isinstance(v.left, ast.Name) \
            and v.left.id == pid and isinstance(v.right, ast.Name) and v.right.id == n
        sub = same(v, template_expr(f"{pid} - {outer} * {n}")) or same(v, template_expr(f"{pid} - {n} * {outer}"))
        return mod or sub
    col = _top_assign(fn, is_column)
    if col is None:
        return f"does not take the column {pid} % {n}"
    column = col[1].targets[0].id
    if not all(_assigned_once(fn, x) for x in (pid, outer, column)) or n in stored_names(fn):
        return "reassigns the program id, its parts or n"
    return pid, outer, column, n


def _tile_columns_of(tree: ast.Module, name: str, ctx: OpContext) -> str:
    """Tile kernel *name* of *tree* in place; the edit's description."""
    fn = jit_functions(tree)[name]
    found = _column_decomposition(fn)
    if isinstance(found, str):
        raise Skip(f"{name} {found}")
    pid, outer, column, n = found
    if any(program_id_axis(x) not in (None, 0) for x in ast.walk(fn)) or \
            sum(program_id_axis(x) == 0 for x in ast.walk(fn)) != 1:
        raise Skip(f"{name} reads the program id more than once or on another axis")
    if not _has_strided_access(fn, {column, pid}):
        raise Skip(f"{name} has no access that adds {column} unscaled to offsets scaled by a stride")
    calls, sites, dims = one_d_launch_sites(tree, name)
    taken = all_names(tree)
    block = fresh_name(taken, "BLOCK_C")
    grids = []
    for call, d in zip(calls, dims):
        n_host = call_binding(call, fn).get(n)
        factors = _product_factors(d[0])
        hit = next((i for i, f in enumerate(factors) if n_host is not None and same(f, n_host)), None)
        if hit is None:
            raise Skip(f"{name}'s grid {ast.unparse(d[0])} is not a product with the column count")
        factors[hit] = template_expr("triton.cdiv(N, B)", N=n_host, B=block)
        grid = factors[0]
        for f in factors[1:]:
            grid = ast.BinOp(left=grid, op=ast.Mult(), right=f)
        grids.append(grid)
    n_blocks, col_mask = fresh_name(taken, f"{n}_blocks"), fresh_name(taken, f"{column}_mask")
    decomposition = (pid, outer, column)
    body = []
    for stmt in fn.body:
        target = stmt.targets[0].id if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) \
            else None
        if target in (outer, column):
            continue
        if target not in decomposition:   # pid elsewhere is the element index outer * n + column
            _replace_name(stmt, pid, template_expr(f"({outer} * {n} + {column})"))
        body.append(stmt)
        if target == pid:
            setup = template(f"{n_blocks} = tl.cdiv({n}, {block})\n"
                             f"{outer} = {pid} // {n_blocks}\n"
                             f"{column} = {pid} % {n_blocks} * {block} + tl.arange(0, {block})\n"
                             f"{col_mask} = {column} < {n}\n")
            body.extend(setup)
    fn.body = body
    _Tiler(fn, setup, column, col_mask, 0, block).apply()
    for (_, setter), grid in zip(sites, grids):
        setter(ast.Tuple(elts=[grid], ctx=ast.Load()))
    _finish(tree, name, block, COLUMN_BLOCKS, ctx)
    return (f"{name}: each program reduces {block} in {COLUMN_BLOCKS} adjacent columns ({column}) "
            f"as a 2-D tile, loads coalesced along the columns")


def _first_kernel(ctx: OpContext, edit_kernel) -> Edit:
    """The edit of the first launched kernel *edit_kernel* (tree, name, ctx) -> description applies to."""
    reasons = []
    for name in launched_kernels(ctx.module.tree):
        tree = ctx.module.clone()
        try:
            return Edit(tree, edit_kernel(tree, name, ctx))
        except Skip as exc:
            reasons.append(str(exc))
    raise Skip("; ".join(reasons) or "no launched kernel")


def tile_columns(ctx: OpContext) -> Edit:
    """Each program reduces BLOCK_C adjacent columns instead of one (coalesced loads)."""
    return _first_kernel(ctx, _tile_columns_of)


def _replace_name(node: ast.AST, name: str, expr: ast.expr) -> None:
    for parent in ast.walk(node):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, ast.Name) and value.id == name and isinstance(value.ctx, ast.Load):
                setattr(parent, field, copy.deepcopy(expr))
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    if isinstance(v, ast.Name) and v.id == name and isinstance(v.ctx, ast.Load):
                        value[i] = copy.deepcopy(expr)


def _tile_rows_of(tree: ast.Module, name: str, ctx: OpContext) -> str:
    """Tile kernel *name* of *tree* in place; the edit's description."""
    fn = jit_functions(tree)[name]
    calls = launch_calls_in_launch(tree, name)
    sites = [grid_site(tree, c) for c in calls]
    dims = [grid_dims(expr) for expr, _ in sites]
    axes = [program_id_axis(x) for x in ast.walk(fn) if is_call_to(x, "program_id")]
    for axis in sorted({a for a in axes if a is not None}):
        found = _top_assign(fn, lambda v: program_id_axis(v) == axis)
        if found is None or axes.count(axis) != 1 or any(axis >= len(d) for d in dims):
            continue
        i, stmt = found
        index = stmt.targets[0].id
        if not _assigned_once(fn, index) or not _has_strided_access(fn, {index}):
            continue
        bounds = [{p for p, e in call_binding(call, fn).items() if same(e, d[axis])} for call, d in zip(calls, dims)]
        bound = next((a.arg for a in fn.args.args if not is_constexpr_arg(a)
                      and all(a.arg in b for b in bounds)), None)
        if bound is None:
            continue
        taken = all_names(tree)
        block, mask = fresh_name(taken, "BLOCK_M"), fresh_name(taken, f"{index}_mask")
        setup = template(f"{index} = tl.program_id({axis}) * {block} + tl.arange(0, {block})\n"
                         f"{mask} = {index} < {bound}\n")
        fn.body[i:i + 1] = setup
        _Tiler(fn, setup, index, mask, 1, block).apply()
        for (_, setter), d in zip(sites, dims):
            d = list(d)
            d[axis] = template_expr("triton.cdiv(E, B)", E=d[axis], B=block)
            setter(ast.Tuple(elts=d, ctx=ast.Load()))
        _finish(tree, name, block, ROW_BLOCKS, ctx)
        return (f"{name}: each program handles {block} in {ROW_BLOCKS} consecutive {index} values as a "
                f"2-D tile, so the access strided along its vector moves whole sectors")
    raise Skip(f"{name} has no scalar program index, bounded by a kernel argument, that an access adds "
               "unscaled to vector offsets scaled by a stride")


def tile_2d(ctx: OpContext) -> Edit:
    """Each program handles BLOCK_M consecutive values of its scalar program index (a 2-D tile)."""
    return _first_kernel(ctx, _tile_rows_of)


OPERATORS = (Operator("tile_columns", "mutate", 2, tile_columns),
             Operator("tile_2d", "mutate", 2, tile_2d))
