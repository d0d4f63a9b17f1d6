"""Split a row reduction over several programs per row (two-phase, deterministic).

Recognised shape: a launched kernel on a literal 1-D grid of one program per row
(``row = tl.program_id(0)``) whose top-level statements hold block loops over the
row, ``for v in range(0, N, BLOCK)`` or ``range(tl.cdiv(N, BLOCK))``::

    acc = tl.zeros([BLOCK], ...)                 # identity init: 0 (sum), -inf (max), +inf (min)
    for start in range(0, N, BLOCK):             # reduction pass: no stores, only
        ...; acc += f(x)                         #   accumulators carried across blocks
    mean = tl.sum(acc, axis=0) / N               # vector accumulators reduced after the loop
    ...                                          # more reduction passes (may use mean)
    for start in range(0, N, BLOCK):             # optional write pass(es): stores, nothing carried
        ...; tl.store(y_row + start + cols, ...)

Each reduction pass becomes a kernel ``<kernel>_part<k>`` run on ``SPLIT`` programs
per row, each over a contiguous chunk of whole blocks, that writes its partial
(``tl.sum(acc)``, or the scalar accumulator) to an fp32 scratch buffer allocated in
``launch`` (one entry per (row, split)).  Every later kernel recombines the ``SPLIT``
partials of its row (sum of sums, max of maxes) in place of the loop, so a pass that
depends on an earlier pass's scalar (variance of x - mean) is its own kernel,
launched after the one it depends on.  The original kernel keeps the write passes
on ``SPLIT`` programs per row (stores outside them guarded by ``split == 0``) or,
with no write pass, runs one program per row.  Programs never wait on each other:
launch order alone makes every partial written before it is read.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from .ast_loops import block_loop
from .ast_module import (Skip, all_names, arg_names, fresh_name, is_call_to, is_constexpr_arg, launch_function,
                         launched_kernels, loaded_names, program_id_axis, read_params, same, statement_lists,
                         stored_names, template, template_expr, uses_dot)
from .ast_signature import (add_constexpr_param, add_runtime_param, add_template_param, grid_dims, grid_site,
                            launch_calls_in_launch, pass_keyword)
from .ops_base import TRACED_KERNEL_CONFIGS, Edit, OpContext, Operator, kernel_space_size
from .ops_persistent import unwrap_persistent
from .ops_online import _assign, _constant, _fill_value, _reduced, _sum_update

#: Programs per row, the first being the default.
SPLIT_VALUES = [8, 4, 16, 32]

_EFFECTS = ("store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
            "atomic_and", "atomic_or", "atomic_xor")
#: Combine kind -> (reduction call, identity test on the init's fill value).
_COMBINE = {
    "sum": ("sum", lambda v: v == 0.0),
    "max": ("max", lambda v: v <= -1e30),
    "min": ("min", lambda v: v >= 1e30),
}


@dataclass
class Accumulator:
    name: str
    kind: str          # "sum" | "max" | "min"
    vector: bool       # reduced after the loop by tl.<kind>(acc, axis=0); else used as a scalar


@dataclass
class RowPasses:
    pid_index: int                  # body index of ``row = tl.program_id(0)``
    row: str
    block: str
    n: str
    reductions: list[int]           # body indices of the reduction loops, in order
    accumulators: list[list[Accumulator]]
    writes: list[int]               # body indices of the write loops (after the reductions)


def _effects(node: ast.AST) -> bool:
    return any(is_call_to(n, *_EFFECTS) for n in ast.walk(node))


def _update(stmt: ast.stmt) -> tuple[str, str, ast.expr] | None:
    """(acc, kind, E) for ``acc += E`` / ``acc = acc + E`` / ``acc = tl.maximum(acc, E)`` / minimum."""
    s = _sum_update(stmt)
    if s:
        return s[0], "sum", s[1]
    a = _assign(stmt)
    for kind, fname in (("max", "maximum"), ("min", "minimum")):
        if a and is_call_to(a[1], fname) and len(a[1].args) == 2 and not a[1].keywords:
            x, y = a[1].args
            if isinstance(x, ast.Name) and x.id == a[0]:
                return a[0], kind, y
            if isinstance(y, ast.Name) and y.id == a[0]:
                return a[0], kind, x
    return None


def _reads_before_write(stmts: list[ast.stmt], names: set[str], defined: set[str] | None = None) -> set[str]:
    """Names of *names* that *stmts* (run in order) may read before assigning them."""
    defined = set(defined or ())
    out: set[str] = set()
    for stmt in stmts:
        if isinstance(stmt, ast.For):
            out |= (loaded_names(stmt.iter) & names) - defined
            inner = defined | stored_names(stmt.target)
            out |= _reads_before_write(stmt.body, names, inner)   # names a nested loop carries count too
        elif isinstance(stmt, (ast.If, ast.While)):
            out |= (loaded_names(stmt.test) & names) - defined
            out |= _reads_before_write(stmt.body, names, defined)
            out |= _reads_before_write(stmt.orelse, names, defined)
        else:
            value = stmt.value if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) else stmt
            reads = loaded_names(value) if value is not None else set()
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                reads.add(stmt.target.id)
            out |= (reads & names) - defined
            defined |= stored_names(stmt)
    return out


def _carried(loop: ast.For) -> tuple[set[str], set[str]]:
    """(names the loop assigns, names it carries from one block to the next)."""
    assigned = stored_names(loop) - stored_names(loop.target)
    return assigned, _reads_before_write(loop.body, assigned, stored_names(loop.target))


def _scope(body: list[ast.stmt], start: int, name: str) -> list[int]:
    """Indices after *start* up to (not including) the next top-level assignment of *name*."""
    out = []
    for i in range(start + 1, len(body)):
        if name in stored_names(body[i]) and not isinstance(body[i], (ast.For, ast.If, ast.While)):
            break
        out.append(i)
    return out


def _is_scalar_init(expr: ast.expr) -> bool:
    if _constant(expr) is not None:
        return True
    if is_call_to(expr, "full", "zeros") and expr.args:
        shape = expr.args[0]
        return isinstance(shape, (ast.List, ast.Tuple)) and not shape.elts
    return False


def _accumulators(body: list[ast.stmt], index: int) -> list[Accumulator]:
    """The accumulators of the reduction loop ``body[index]``; Skip when it is not one."""
    loop = body[index]
    assigned, carried = _carried(loop)
    if not carried:
        raise Skip("a loop over the row before the write pass carries nothing from block to block")
    accs = []
    for name in sorted(carried):
        updates = [s for s in loop.body if name in stored_names(s)]
        stores = sum(1 for n in ast.walk(loop) if isinstance(n, ast.Name) and n.id == name
                     and isinstance(n.ctx, ast.Store))
        upd = _update(updates[0]) if len(updates) == 1 and stores == 1 else None
        if upd is None or name in loaded_names(upd[2]):
            raise Skip(f"{name} is carried across blocks but is not a plain sum/max/min accumulator "
                       f"(`{name} += E`, `{name} = tl.maximum({name}, E)`); an online softmax's running "
                       "max and rescaled sum are not split")
        others = [s for s in loop.body if s is not updates[0]]
        if any(name in loaded_names(s) for s in others):
            raise Skip(f"accumulator {name} is read inside its loop")
        kind = upd[1]
        init = next((i for i in range(index - 1, -1, -1) if name in stored_names(body[i])), None)
        a = _assign(body[init]) if init is not None else None
        if a is None or a[0] != name or any(name in loaded_names(body[i]) for i in range(init + 1, index)):
            raise Skip(f"accumulator {name} has no plain initialisation before its loop")
        fill = _fill_value(a[1])
        if fill is None or not _COMBINE[kind][1](fill):
            raise Skip(f"accumulator {name} does not start at the identity of its {kind}")
        if any("int" in ast.unparse(k.value) for k in getattr(a[1], "keywords", []) if k.arg == "dtype"):
            raise Skip(f"accumulator {name} is an integer (partials are fp32)")
        scope = [body[i] for i in _scope(body, index, name)]
        uses = [n for s in scope for n in ast.walk(s) if isinstance(n, ast.Name) and n.id == name
                and isinstance(n.ctx, ast.Load)]
        reduced = [c for s in scope for c in ast.walk(s)
                   if isinstance(c, ast.Call) and same(_reduced(c, _COMBINE[kind][0]), ast.Name(id=name, ctx=ast.Load()))]
        if reduced and len(reduced) == len(uses):
            vector = True
        elif not reduced and _is_scalar_init(a[1]):
            vector = False
        else:
            raise Skip(f"accumulator {name} is used after its loop other than by tl.{_COMBINE[kind][0]}({name}, axis=0)")
        accs.append(Accumulator(name, kind, vector))
    temps = assigned - carried
    leaks = _reads_before_write(body[index + 1:], temps)
    if leaks:
        raise Skip(f"{', '.join(sorted(leaks))} from inside a reduction loop is read after it")
    return accs


def _row_block(fn: ast.FunctionDef, body: list[ast.stmt]) -> tuple[str, str]:
    """(BLOCK, N): the constexpr whose loops are all top-level block loops over one runtime N."""
    constexprs = [a.arg for a in fn.args.args if is_constexpr_arg(a)]
    top = {id(s) for s in body}
    for block in constexprs:
        loops = [n for n in ast.walk(fn) if isinstance(n, ast.For) and block in loaded_names(n.iter)]
        bounds = {block_loop(n, block) for n in loops}
        if not loops or len(bounds) != 1 or None in bounds:
            continue
        n = bounds.pop()
        if n not in arg_names(fn) or n in constexprs or any(n in stored_names(s) for s in body):
            continue
        if any(id(l) not in top for l in loops):
            raise Skip(f"{fn.name} has block loops over {n} that are not at its top level")
        return block, n
    raise Skip(f"{fn.name} has no top-level block loops over a runtime row length")


def find_row_passes(fn: ast.FunctionDef) -> RowPasses:
    """The reduction and write passes of a one-program-per-row kernel; Skip when absent."""
    body = fn.body
    if uses_dot(fn):
        raise Skip(f"{fn.name} uses tl.dot (its accumulator is a tile, not a row reduction)")
    if any(is_call_to(n, "num_programs") for n in ast.walk(fn)):
        raise Skip(f"{fn.name} reads tl.num_programs")
    pids = [n for n in ast.walk(fn) if is_call_to(n, "program_id")]
    pid_index = next((i for i, s in enumerate(body) if _assign(s) and program_id_axis(s.value) == 0), None)
    if pid_index is None or len(pids) != 1 or _effects(ast.Module(body=body[:pid_index], type_ignores=[])):
        raise Skip(f"{fn.name} does not bind its row once as `row = tl.program_id(0)` at the top")
    row = _assign(body[pid_index])[0]
    if any(row in stored_names(s) for s in body[pid_index + 1:]):
        raise Skip(f"{fn.name} reassigns {row}")
    block, n = _row_block(fn, body)
    loops = [i for i, s in enumerate(body) if block_loop(s, block) == n]
    reductions, accumulators, writes = [], [], []
    for i in loops:
        if _effects(body[i]):
            assigned, carried = _carried(body[i])
            if carried:
                raise Skip(f"a loop of {fn.name} stores and carries {', '.join(sorted(carried))} "
                           "across blocks (a scan)")
            if _reads_before_write(body[i + 1:], assigned):
                raise Skip(f"a value from the last block of a write loop of {fn.name} is read after it")
            writes.append(i)
            continue
        if writes:
            raise Skip(f"{fn.name} has a reduction loop after a write loop")
        accumulators.append(_accumulators(body, i))
        reductions.append(i)
    if not reductions:
        raise Skip(f"{fn.name} has no reduction loop over its row")
    if any(_effects(s) and isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)) for s in body):
        raise Skip(f"{fn.name} assigns the result of a store or atomic")
    return RowPasses(pid_index, row, block, n, reductions, accumulators, writes)


class _ReplaceReductions(ast.NodeTransformer):
    """``tl.<fname>(acc, axis=0)`` -> *total*."""

    def __init__(self, acc: str, fname: str, total: str):
        self.acc, self.fname, self.total = acc, fname, total

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if same(_reduced(node, self.fname), ast.Name(id=self.acc, ctx=ast.Load())):
            return ast.copy_location(ast.Name(id=self.total, ctx=ast.Load()), node)
        return self.generic_visit(node)


def _read_later(body: list[ast.stmt], name: str) -> bool:
    """True when a statement of *body* may read *name* before a plain reassignment."""
    for stmt in body:
        if name in _reads_before_write([stmt], {name}):
            return True
        if isinstance(stmt, ast.Assign) and name in stored_names(stmt):
            return False
    return False


def _drop_dead_assignments(body: list[ast.stmt]) -> None:
    """Remove top-level ``name = E`` (E without effects) whose value nothing reads."""
    changed = True
    while changed:
        changed = False
        for i in range(len(body) - 1, -1, -1):
            a = _assign(body[i])
            if a and not _effects(body[i]) and not _read_later(body[i + 1:], a[0]):
                del body[i]
                changed = True
                break


@dataclass
class _Names:
    pid: str
    split: str
    block_lo: str
    block_hi: str
    split_count: str
    partials: list[list[str]]       # scratch pointer per accumulator, per reduction
    totals: list[list[str]]         # recombined value per vector accumulator


def _chunk_range(loop: ast.For, passes: RowPasses, names: _Names) -> None:
    """Restrict a block loop to this program's chunk of whole blocks."""
    lo, hi = ast.Name(id=names.block_lo, ctx=ast.Load()), ast.Name(id=names.block_hi, ctx=ast.Load())
    if len(loop.iter.args) == 3:
        loop.iter = template_expr("range(LO * BLOCK, HI * BLOCK, BLOCK)", LO=lo, HI=hi, BLOCK=passes.block)
    else:
        loop.iter = template_expr("range(LO, HI)", LO=lo, HI=hi)


def _build_kernel(fn: ast.FunctionDef, passes: RowPasses, names: _Names, stage: int, new_name: str) -> ast.FunctionDef:
    """The kernel for reduction *stage* (its partials), or with stage == len(reductions) the final one."""
    kernel = copy.deepcopy(fn)
    kernel.name = new_name
    body = kernel.body
    final = stage == len(passes.reductions)
    split = not final or bool(passes.writes)
    for j, index in enumerate(passes.reductions[:stage]):
        for acc, total in zip(passes.accumulators[j], names.totals[j]):
            if acc.vector:
                fname = _COMBINE[acc.kind][0]
                for i in _scope(body, index, acc.name):
                    body[i] = _ReplaceReductions(acc.name, fname, total).visit(body[i])
    out: list[ast.stmt] = []
    for i, stmt in enumerate(body):
        if i == passes.pid_index:
            if split:
                out += template("PID = tl.program_id(0)\nROW = PID // S\nSPLIT_ID = PID % S\n"
                                "LO = SPLIT_ID * tl.cdiv(tl.cdiv(N, BLOCK), S)\n"
                                "HI = tl.minimum(LO + tl.cdiv(tl.cdiv(N, BLOCK), S), tl.cdiv(N, BLOCK))\n",
                                PID=names.pid, ROW=passes.row, SPLIT_ID=names.split, S=names.split_count,
                                LO=names.block_lo, HI=names.block_hi, N=passes.n, BLOCK=passes.block)
            else:
                out.append(stmt)
        elif i in passes.reductions:
            j = passes.reductions.index(i)
            if j < stage:
                for acc, ptr, total in zip(passes.accumulators[j], names.partials[j], names.totals[j]):
                    out += template(f"T = tl.{_COMBINE[acc.kind][0]}(tl.load(P + ROW * S + tl.arange(0, S)), axis=0)",
                                    T=total if acc.vector else acc.name, P=ptr, ROW=passes.row,
                                    S=names.split_count)
                continue
            _chunk_range(stmt, passes, names)
            out.append(stmt)
            for acc, ptr in zip(passes.accumulators[j], names.partials[j]):
                value = f"tl.{_COMBINE[acc.kind][0]}(ACC, axis=0)" if acc.vector else "ACC"
                out += template(f"tl.store(P + PID, {value})", P=ptr, PID=names.pid, ACC=acc.name)
            break
        elif i in passes.writes:
            _chunk_range(stmt, passes, names)
            out.append(stmt)
        elif _effects(stmt):
            if not final:
                continue
            if split:
                (guard,) = template("if SPLIT_ID == 0:\n    pass\n", SPLIT_ID=names.split)
                guard.body = [stmt]
                stmt = guard
            out.append(stmt)
        else:
            out.append(stmt)
    _drop_dead_assignments(out)
    kernel.body = out
    return kernel


def _launch_site(tree: ast.Module, call: ast.Call) -> tuple[list[ast.stmt], int]:
    """The statement list of ``launch`` holding the plain statement that makes *call*."""
    launch = launch_function(tree)
    for stmts in statement_lists(launch):
        for i, stmt in enumerate(stmts):
            if not isinstance(stmt, (ast.For, ast.If, ast.While, ast.With, ast.FunctionDef)) \
                    and any(n is call for n in ast.walk(stmt)):
                return stmts, i
    raise Skip("the kernel launch is not a plain statement of launch()")


def _split_values(space: dict) -> list[int]:
    """SPLIT_VALUES, trimmed so the kernel space stays within what the verifier traces: the
    smallest non-default values go first (few long rows want many programs per row)."""
    values = list(SPLIT_VALUES)
    base = kernel_space_size(space)
    while len(values) > 1 and base * len(values) > max(TRACED_KERNEL_CONFIGS, base):
        values.remove(min(values[1:]))
    return values


def split_row(ctx: OpContext) -> Edit:
    """Split the reduction passes of a one-program-per-row kernel over SPLIT programs per row.
    A kernel made persistent gets its one program per row back first (SPLIT programs per row
    already fill the device; ``persistent`` may be applied again to the result)."""
    tree, unwrapped = unwrap_persistent(ctx.module.clone())
    space = read_params(tree)
    launch = launch_function(tree)
    reasons = []
    for name, fn in launched_kernels(tree).items():
        try:
            passes = find_row_passes(fn)
            calls = launch_calls_in_launch(tree, name)
            if len(calls) != 1:
                raise Skip(f"{name} is launched more than once")
            (call,) = calls
            grid_expr, _ = grid_site(tree, call)
            dims = grid_dims(grid_expr)
            if len(dims) != 1:
                raise Skip(f"{name} is launched on a grid that is not 1-D")
            inputs = [a.arg for a in (*launch.args.posonlyargs, *launch.args.args)]
            if not inputs:
                raise Skip("launch() takes no positional input to place the scratch buffers on")
            stmts, at = _launch_site(tree, call)
        except Skip as exc:
            reasons.append(str(exc))
            continue
        taken = all_names(tree) | set(space)
        names = _Names(pid=fresh_name(taken, "pid"), split=fresh_name(taken, "split_id"),
                       block_lo=fresh_name(taken, "block_lo"), block_hi=fresh_name(taken, "block_hi"),
                       split_count=fresh_name(taken, "SPLIT"),
                       partials=[[fresh_name(taken, f"{a.name}_partials") for a in accs]
                                 for accs in passes.accumulators],
                       totals=[[fresh_name(taken, f"{a.name}_total") for a in accs]
                               for accs in passes.accumulators])
        stages = len(passes.reductions)
        part_names = [fresh_name(taken, f"{name}_part{k + 1}") for k in range(stages)]
        kernels = [_build_kernel(fn, passes, names, k, part_names[k]) for k in range(stages)]
        final = _build_kernel(fn, passes, names, stages, name)
        index = tree.body.index(fn)
        tree.body[index:index + 1] = kernels + [final]

        rows = dims[0]
        split_grid = ast.Tuple(elts=[template_expr("G * S", G=rows, S=names.split_count)], ctx=ast.Load())
        new_stmts: list[ast.stmt] = []
        for k, ptrs in enumerate(names.partials):
            for ptr in ptrs:
                new_stmts += template("P = torch.empty((G * S,), device=X.device, dtype=torch.float32)",
                                      P=ptr, G=rows, S=names.split_count, X=inputs[0])
        part_calls = []
        for k in range(stages):
            part = copy.deepcopy(call)
            part.func = ast.Subscript(value=ast.Name(id=part_names[k], ctx=ast.Load()),
                                      slice=copy.deepcopy(split_grid), ctx=ast.Load())
            new_stmts.append(ast.Expr(value=part))
            part_calls.append(part)
        if passes.writes:
            call.func.slice = copy.deepcopy(split_grid)
        stmts[at:at] = new_stmts

        kernel_params = {part_names[k]: [p for ps in names.partials[:k + 1] for p in ps] for k in range(stages)}
        kernel_params[name] = [p for ps in names.partials for p in ps]
        for kname, kcall in [*zip(part_names, part_calls), (name, call)]:
            for ptr in kernel_params[kname]:
                add_runtime_param(tree, kname, ptr, [kcall])
                pass_keyword([kcall], ptr, ast.Name(id=ptr, ctx=ast.Load()))
        for kname, kcall in zip(part_names, part_calls):
            add_constexpr_param(tree, kname, names.split_count)
            pass_keyword([kcall], names.split_count, ast.Name(id=names.split_count, ctx=ast.Load()))
        values = _split_values(space)
        add_template_param(tree, name, names.split_count, values)
        accs = ", ".join(f"{a.kind} {a.name}" for accs in passes.accumulators for a in accs)
        return Edit(tree, f"{name}: {stages} reduction pass(es) ({accs}) split over {names.split_count} in {values} "
                          f"programs per row, partials recombined by {', '.join(part_names[1:] + [name])}; "
                          f"{'write pass on SPLIT programs per row' if passes.writes else 'one program per row at the end'}"
                          + (f"; persistent grid of {', '.join(unwrapped)} undone first" if unwrapped else ""))
    raise Skip("; ".join(reasons) or "no launched kernel")


OPERATORS = (Operator("split_row", "mutate", 2.0, split_row),)
