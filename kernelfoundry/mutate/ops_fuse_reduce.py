"""Row-reduction fusion: a row-sum epilogue moves into the tiled producer of its input as a
deterministic two-phase reduction.

Recognised in ``launch``: kernel P stores one 2-D tile per program to a buffer ``h`` that
``launch`` allocates with shape (M, N) (the same recognition as ``fuse_epilogue``), then
kernel E, launched on the grid ``(M,)``, reads ``h`` only in one block loop over its row

    row = tl.program_id(0)
    for start in range(0, N, BLOCK):                 # cols = tl.arange(0, BLOCK)
        mask = start + cols < N
        x = tl.load(h_ptr + row * N + start + cols, mask=mask, other=...)
        y = f(x)                                      # elementwise code of x, mask, scalars
        acc += tl.where(mask, g(x, y), 0.0)           # or acc += tl.sum(..., axis=0)

with ``acc`` zero-initialised and, for a vector ``acc``, used after the loop only as
``tl.sum(acc, axis=0)``.  P's store becomes E's elementwise code applied to its tile (the
loaded value is P's tile cast to the buffer's dtype, ``mask`` is P's store mask), summed
over the tile's columns with out-of-range entries 0, and stored as one partial per
(row, column tile) to a new fp32 buffer of shape (M, cdiv(N, BLOCK_N)); the partial's
column is the tile index ``t`` of P's columns ``rn = t * BLOCK_N + tl.arange(0, BLOCK_N)``.
E keeps its loop, now over that buffer's rows of partials: the elementwise code goes,
the load reads partials (``other=0``) and the accumulation adds them.  No atomics: launch
order makes every partial written before E reads it, so results are deterministic.
Anything else (E reads indices in its elementwise code, other loops over the row, the
buffer read twice, ...) is left alone with its reason (``Skip``).
"""

from __future__ import annotations

import ast
import builtins
import copy

from .ast_module import (Skip, _Substitute, all_names, arg_names, fresh_name, is_call_to, is_constexpr_arg,
                         jit_functions, launch_function, loaded_names, program_id_axis, same, statement_lists,
                         stored_names, template, template_expr)
from .ast_signature import add_runtime_param, grid_dims, grid_site, launch_calls_in_launch, pass_keyword
from .ops_base import Edit, OpContext, Operator
from .ops_fuse import _NOT_ELEMENTWISE, _Rename, _call_args, fuse_pairs, host_is, shared_intermediate, stored_value
from .ops_fuse_buffers import _add_terms, pointer_offset

#: Calls the elementwise code may not make besides reductions: it must not index or touch memory.
_NOT_PURE = _NOT_ELEMENTWISE + ("load", "store", "program_id", "num_programs", "arange")


def _assigned_once(fn: ast.FunctionDef, name: str, body: list[ast.stmt]) -> ast.expr | None:
    """The value of the one ``name = value`` in *body* when *fn* binds *name* nowhere else."""
    found = [s for s in body if isinstance(s, ast.Assign) and len(s.targets) == 1
             and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name]
    binds = sum(1 for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load))
    return found[0].value if len(found) == 1 and binds == 1 else None


def _arange_of(expr: ast.expr, block: ast.expr) -> bool:
    """True for ``tl.arange(0, block)``."""
    return (is_call_to(expr, "arange") and len(expr.args) == 2 and isinstance(expr.args[0], ast.Constant)
            and expr.args[0].value == 0 and same(expr.args[1], block))


def _tile_index(p_fn: ast.FunctionDef, cols: ast.expr) -> tuple[ast.expr, ast.expr]:
    """From P's ``rn = t * BLOCK_N + tl.arange(0, BLOCK_N)`` (any order): (t, BLOCK_N)."""
    everywhere = [s for body in statement_lists(p_fn) for s in body]
    rn = cols.value if isinstance(cols, ast.Subscript) and isinstance(cols.value, ast.Name) else None
    terms = _add_terms(_assigned_once(p_fn, rn.id, everywhere) or ast.Pass()) if rn is not None else []
    vecs = [t for t in terms if is_call_to(t, "arange") and len(t.args) == 2 and _arange_of(t, t.args[1])]
    if len(terms) == 2 and len(vecs) == 1:
        start, block = terms[1 - terms.index(vecs[0])], vecs[0].args[1]
        if isinstance(start, ast.BinOp) and isinstance(start.op, ast.Mult):
            for t, b in ((start.left, start.right), (start.right, start.left)):
                if same(b, block) and all(n in arg_names(p_fn) or _assigned_once(p_fn, n, everywhere) is not None
                                          for n in loaded_names(t)):
                    return t, block
    raise Skip(f"{p_fn.name}'s tile columns are not t * BLOCK_N + tl.arange(0, BLOCK_N)")


def _row_mask(mask: ast.expr | None, rows: ast.expr) -> ast.expr:
    """``rm < M`` from P's store mask ``(rm[:, None] < M) & ...``."""
    for node in ast.walk(mask) if mask is not None else ():
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Lt) \
                and same(node.left, rows) and not loaded_names(node.comparators[0]) & loaded_names(rows):
            return ast.Compare(left=copy.deepcopy(rows.value), ops=[ast.Lt()], comparators=[node.comparators[0]])
    raise Skip("the producer's store mask does not bound its rows (rows[:, None] < M)")


def _fuse_reduce(tree: ast.Module, producer: str, p_call: ast.Call, consumer: str, e_call: ast.Call,
                 e_stmt: ast.stmt) -> str:
    kernels = jit_functions(tree)
    p_fn, e_fn = kernels[producer], kernels[consumer]
    launch = launch_function(tree)
    inter = shared_intermediate(tree, producer, p_call, consumer, e_call)
    host_c, e_param, (m_host, n_host) = inter.host, inter.e_param, inter.shape
    e_bind = inter.e_bind
    grid = grid_dims(grid_site(tree, e_call)[0])
    if len(grid) != 1 or not any(same(grid[0], ast.parse(c, mode="eval").body)
                                 for c in (ast.unparse(m_host), f"{host_c}.shape[0]")):
        raise Skip(f"{consumer} is not launched with one program per row of {host_c}")

    # E: one top-level block loop reads the buffer, once.
    row = next((s.targets[0].id for s in e_fn.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and program_id_axis(s.value) == 0), None)
    if row is None or _assigned_once(e_fn, row, e_fn.body) is None:
        raise Skip(f"{consumer} does not bind its row once to tl.program_id(0)")
    if sum(isinstance(n, ast.Name) and n.id == e_param for n in ast.walk(e_fn)) != 1:
        raise Skip(f"{consumer} uses {e_param} more than once")
    loop = next((s for s in e_fn.body if isinstance(s, ast.For) and e_param in loaded_names(s)), None)
    it = loop.iter if loop is not None else None
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and len(it.args) == 3 and isinstance(it.args[0], ast.Constant) and it.args[0].value == 0
            and isinstance(loop.target, ast.Name) and not loop.orelse):
        raise Skip(f"{consumer} does not read {e_param} in a top-level loop for start in range(0, N, BLOCK)")
    start, length, block = loop.target.id, it.args[1], it.args[2]
    if not host_is(length, e_bind, ast.unparse(n_host), f"{host_c}.shape[1]", f"{host_c}.stride(0)"):
        raise Skip(f"{consumer}'s loop does not run over the row length of {host_c}")
    if any(not isinstance(s, (ast.Assign, ast.AugAssign)) or len(getattr(s, "targets", [0])) != 1
           or not isinstance(getattr(s, "target", None) or s.targets[0], ast.Name) for s in loop.body):
        raise Skip(f"{consumer}'s row loop has statements other than assignments to names")

    def resolve(expr: ast.expr) -> ast.expr:   # a name assigned once in the loop (or at E's top) -> its value
        if isinstance(expr, ast.Name):
            value = _assigned_once(e_fn, expr.id, loop.body) or _assigned_once(e_fn, expr.id, e_fn.body)
            if value is not None:
                return value
        return expr

    def in_row(expr: ast.expr) -> bool:         # start + tl.arange(0, BLOCK), any order, through names
        terms = [resolve(t) for t in _add_terms(resolve(expr))]
        return len(terms) == 2 and sum(isinstance(t, ast.Name) and t.id == start for t in terms) == 1 \
            and sum(_arange_of(t, block) for t in terms) == 1

    loads = [s for s in loop.body if isinstance(s, ast.Assign) and is_call_to(s.value, "load")
             and e_param in loaded_names(s.value)]
    if len(loads) != 1:
        raise Skip(f"{consumer} does not assign its one load of {e_param} to a name")
    load_stmt = loads[0]
    value_name = load_stmt.targets[0].id
    load_args = _call_args(load_stmt.value, ("pointer", "mask", "other"))
    offset = pointer_offset(load_args["pointer"], e_param) if "pointer" in load_args else None
    terms = _add_terms(offset) if offset is not None else []
    row_terms = [t for t in terms if isinstance(t, ast.BinOp) and isinstance(t.op, ast.Mult)
                 and {ast.dump(t.left), ast.dump(t.right)} == {ast.dump(ast.Name(id=row, ctx=ast.Load())),
                                                               ast.dump(length)}]
    rest = [t for t in terms if t not in row_terms]
    in_row_offset = rest[0] if len(rest) == 1 else ast.BinOp(left=rest[0], op=ast.Add(), right=rest[1]) \
        if len(rest) == 2 else None
    if len(row_terms) != 1 or in_row_offset is None or not in_row(in_row_offset):
        raise Skip(f"{consumer} does not read {e_param} at row * N + start + tl.arange(0, BLOCK)")
    mask = load_args.get("mask")
    bound = resolve(mask) if mask is not None else None
    if not (isinstance(bound, ast.Compare) and len(bound.ops) == 1 and isinstance(bound.ops[0], ast.Lt)
            and same(bound.comparators[0], length) and in_row(bound.left)):
        raise Skip(f"{consumer}'s load of {e_param} is not masked with start + tl.arange(0, BLOCK) < N")

    # The elementwise code: the loop's statements that depend on the loaded value.
    derived, elementwise = {value_name}, []
    for s in loop.body:
        if s is not load_stmt and loaded_names(s) & derived:
            elementwise.append(s)
            derived |= stored_names(s) if isinstance(s, ast.Assign) else set()
    accumulations = [s for s in elementwise if isinstance(s, ast.AugAssign)]
    if len(accumulations) != 1 or not isinstance(accumulations[0].op, ast.Add) \
            or elementwise[-1] is not accumulations[0]:
        raise Skip(f"{consumer}'s row loop does not end its elementwise code in one acc += ...")
    aug = accumulations[0]
    acc, contribution = aug.target.id, aug.value
    reduced = is_call_to(contribution, "sum") and len(contribution.args) == 1 \
        and [ast.unparse(k) for k in contribution.keywords] in ([], ["axis=0"])
    if reduced:
        contribution = contribution.args[0]
    inits = [s.value for s in e_fn.body[:e_fn.body.index(loop)] if isinstance(s, ast.Assign)
             and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and s.targets[0].id == acc]
    binds = sum(isinstance(n, ast.Name) and n.id == acc and not isinstance(n.ctx, ast.Load) for n in ast.walk(e_fn))
    init = inits[0] if len(inits) == 1 and binds == 2 else None
    zero = isinstance(init, ast.Constant) and init.value == 0 or is_call_to(init, "zeros") or (
        is_call_to(init, "full") and len(init.args) >= 2 and isinstance(init.args[1], ast.Constant)
        and init.args[1].value == 0)
    if init is None or not zero:
        raise Skip(f"{consumer}'s accumulator {acc} does not start at zero before the loop")
    after = e_fn.body[e_fn.body.index(loop) + 1:]
    sums = [n for s in after for n in ast.walk(s) if is_call_to(n, "sum") and len(n.args) == 1
            and isinstance(n.args[0], ast.Name) and n.args[0].id == acc
            and [ast.unparse(k) for k in n.keywords] in ([], ["axis=0"])]
    acc_reads = sum(isinstance(n, ast.Name) and n.id == acc for s in after for n in ast.walk(s))
    if not reduced and acc_reads != len(sums):
        raise Skip(f"{consumer} uses its vector accumulator {acc} after the loop other than as tl.sum(acc, axis=0)")
    code = elementwise[:-1]
    local = {value_name} | set().union(*(stored_names(s) for s in code))
    mask_name = mask.id if isinstance(mask, ast.Name) else None
    reads = set().union(loaded_names(contribution), *(loaded_names(s) for s in code)) - local
    e_args = {a.arg: a for a in e_fn.args.args}
    for node in [contribution, *code]:
        if any(is_call_to(n, *_NOT_PURE) or any(k.arg == "axis" for k in getattr(n, "keywords", []))
               for n in ast.walk(node)):
            raise Skip(f"{consumer}'s per-element code indexes, reduces or touches memory")
    index_reads = sorted(n for n in reads if n not in e_args and n not in ("tl", "triton", mask_name)
                         and not hasattr(builtins, n))
    if index_reads:
        raise Skip(f"{consumer}'s elementwise code reads {', '.join(index_reads)} (not only the loaded value)")
    if any(local & loaded_names(s) for s in e_fn.body if s is not loop):
        raise Skip(f"{consumer} reads its elementwise values outside the elementwise code")

    # P's side: tile index, rows, row mask, and the names the moved code needs.
    if inter.mask is None:
        raise Skip(f"{producer}'s store has no mask")
    tile, block_n = _tile_index(p_fn, inter.cols)
    row_mask = _row_mask(inter.mask, inter.rows)
    block_host = inter.p_bind.get(block_n.id) if isinstance(block_n, ast.Name) else block_n
    if block_host is None:
        raise Skip(f"{producer}'s {ast.unparse(block_n)} is not passed at its launch")
    taken = all_names(tree)
    p_names = all_names(p_fn)
    rename = {n: fresh_name(taken, n) for n in sorted(local) if n in p_names}
    new_args = []
    for name in sorted(reads & set(e_args) - {mask_name}):
        reuse = next((p for p, v in inter.p_bind.items() if same(v, e_bind.get(name))), None)
        if name not in e_bind:
            raise Skip(f"{consumer}'s argument {name} is not passed at its launch")
        rename[name] = reuse or (name if name not in p_names else fresh_name(taken, name))
        if reuse is None:
            new_args.append((rename[name], e_bind[name], is_constexpr_arg(e_args[name])))
    moved = [_Rename(rename).visit(copy.deepcopy(s)) for s in code]
    term = _Rename(rename).visit(copy.deepcopy(contribution))
    if mask_name is not None:   # the consumer's block mask is the producer's tile mask
        moved = [_Substitute({mask_name: inter.mask}).visit(s) for s in moved]
        term = _Substitute({mask_name: inter.mask}).visit(term)
    if is_call_to(term, "where") and len(term.args) == 3 and same(term.args[0], inter.mask) \
            and isinstance(term.args[2], ast.Constant) and term.args[2].value == 0:
        term = term.args[1]       # masked once below
    part_ptr = fresh_name(p_names | {inter.p_param}, "part_ptr")
    n_parts = fresh_name(all_names(p_fn) | {part_ptr}, "n_col_tiles")
    partial = fresh_name(taken, "partial")
    dtype = next((k.value for k in inter.alloc.keywords if k.arg == "dtype"), None)
    cast = "" if dtype is not None and ast.unparse(dtype) == "torch.float32" else ".to(tl.float32)"
    value = stored_value(p_fn, inter)
    new_body = [ast.Assign(targets=[ast.Name(id=rename.get(value_name, value_name), ctx=ast.Store())],
                           value=value, lineno=0), *moved,
                *template(f"{partial} = tl.sum(tl.where(MASK, TERM, 0.0){cast}, axis=1)\n"
                          f"tl.store({part_ptr} + ROWS * {n_parts} + TILE, {partial}, mask=ROW_MASK)",
                          MASK=inter.mask, TERM=term, ROWS=inter.rows.value, TILE=tile, ROW_MASK=row_mask)]
    inter.store_body[inter.store_index:inter.store_index + 1] = new_body

    # The partial buffer replaces the intermediate in launch; P writes it, E sums its rows.
    host_part = fresh_name(all_names(launch), f"{host_c}_partials")
    alloc = copy.deepcopy(inter.alloc)
    alloc.args[0] = template_expr("(M, triton.cdiv(N, B))", M=m_host, N=n_host, B=block_host)
    alloc.keywords = [k for k in alloc.keywords if k.arg != "dtype"] + [
        ast.keyword(arg="dtype", value=template_expr("torch.float32"))]
    inter.alloc_stmt.targets[0].id, inter.alloc_stmt.value = host_part, alloc
    for call in (p_call, e_call):
        _Rename({host_c: host_part}).visit(call)
    index = arg_names(p_fn).index(inter.p_param)
    p_fn.args.args[index].arg = part_ptr
    for k in (k for call in launch_calls_in_launch(tree, producer) for k in call.keywords if k.arg == inter.p_param):
        k.arg = part_ptr
    parts_len = template_expr(f"{host_part}.shape[1]")
    add_runtime_param(tree, producer, n_parts, launch_calls_in_launch(tree, producer))
    pass_keyword(launch_calls_in_launch(tree, producer), n_parts, parts_len)
    for name, host_value, constexpr in new_args:
        calls = launch_calls_in_launch(tree, producer)
        if constexpr:
            p_fn.args.args.append(ast.arg(arg=name, annotation=template_expr("tl.constexpr")))
        else:
            add_runtime_param(tree, producer, name, calls)
        pass_keyword(calls, name, host_value)

    e_part_ptr = fresh_name(all_names(e_fn), "part_ptr")
    _Rename({e_param: e_part_ptr}).visit(load_stmt)
    e_fn.args.args[arg_names(e_fn).index(e_param)].arg = e_part_ptr
    for k in (k for call in launch_calls_in_launch(tree, consumer) for k in call.keywords if k.arg == e_param):
        k.arg = e_part_ptr
    e_parts = fresh_name(all_names(e_fn), "n_parts")
    add_runtime_param(tree, consumer, e_parts, launch_calls_in_launch(tree, consumer))
    pass_keyword(launch_calls_in_launch(tree, consumer), e_parts, parts_len)
    shorter = _Rename({length.id: e_parts})
    loop.iter = shorter.visit(loop.iter)
    kept = [shorter.visit(s) for s in loop.body if s not in elementwise]
    load = load_stmt.value
    load.args = load.args[:2]
    load.keywords = [k for k in load.keywords if k.arg != "other"] + [
        ast.keyword(arg="other", value=ast.Constant(value=0.0))]
    gathered = ast.Name(id=value_name, ctx=ast.Load())
    aug.value = template_expr("tl.sum(V, axis=0)", V=gathered) if reduced else gathered
    loop.body = kept + [aug]
    return (f"{consumer}'s row reduction fused into {producer}: each tile sums its elementwise code over its "
            f"columns into {host_part} (M x cdiv(N, {ast.unparse(block_host)}), fp32), {consumer} adds those "
            f"partials per row; the intermediate {host_c} is gone")


def fuse_row_reduction(ctx: OpContext) -> Edit:
    """Move a row-sum epilogue into its tiled producer as per-tile partial sums."""
    return fuse_pairs(ctx, _fuse_reduce)


OPERATORS = (Operator("fuse_row_reduction", "mutate", 3.0, fuse_row_reduction),)
