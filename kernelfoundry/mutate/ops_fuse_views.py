"""Two preparations of ``fuse_epilogue`` (:mod:`.ops_fuse`) for the kernels the KernelBench seed
generator writes, where the elementwise epilogue reads the producer's buffer through strides.

:func:`flat_reads`: the generated elementwise kernel E splits its flat offset ``offs`` into
coordinates over its output's dims (``i3 = offs % d3``, ``r3 = offs // d3``, ...) and loads
each input at ``in_k + i0 * s0 + i1 * s1 + ...`` through a view ``launch`` passes with its
strides (``v = bcast(buf, out.shape)``).  When ``buf`` is a buffer the producer writes,
allocated with the same literal shape as E's output (both contiguous), that view is ``buf``
itself and the strided address is ``in_k + offs``: the read is rewritten to that, E gets
``buf`` (the view's statement goes when nothing else reads it), and the fusion proceeds as for
a hand-written flat epilogue.

:func:`place_producer`: after the fusion P's launch reads E's arguments and E's output; when
``launch`` assigns any of them between the two launches (the generator allocates each output
right before its kernel), P's launch moves to where E's was, provided nothing in between
launches a kernel.
"""

from __future__ import annotations

import ast

from .ast_module import Skip, is_call_to, jit_functions, launch_function, loaded_names, same, stored_names
from .ast_signature import call_binding
from .ops_fuse_buffers import _add_terms, _allocation, _dims, pointer_offset

#: Calls a broadcast helper may make for it to be a view that keeps a same-shape tensor as it is.
_VIEW_CALLS = {"unsqueeze", "expand", "dim", "len", "range"}


def _assigned(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    """Names assigned exactly once at the top level of *fn* -> their values."""
    counts: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for stmt in fn.body:
        for name in stored_names(stmt):
            counts[name] = counts.get(name, 0) + 1
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            values[stmt.targets[0].id] = stmt.value
    return {k: v for k, v in values.items() if counts.get(k) == 1}


def _is_view_helper(tree: ast.Module, name: str) -> bool:
    """A module function that only unsqueezes and expands its first argument (``bcast``)."""
    fn = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name), None)
    if fn is None or len(fn.args.args) != 2:
        return False
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
    return all((isinstance(c.func, ast.Attribute) and c.func.attr in _VIEW_CALLS)
               or (isinstance(c.func, ast.Name) and c.func.id in _VIEW_CALLS) for c in calls)


def _host(binding: dict[str, ast.expr], expr: ast.expr) -> str | None:
    h = binding.get(expr.id) if isinstance(expr, ast.Name) else None
    return ast.unparse(h) if h is not None else None


def flat_reads(tree: ast.Module, p_call: ast.Call, consumer: str, e_call: ast.Call) -> None:
    """In place: E's strided reads of a same-shape buffer that P's launch also gets become flat
    reads at E's store offset (see the module docstring); nothing changes when there are none."""
    e_fn = jit_functions(tree)[consumer]
    launch = launch_function(tree)
    e_bind = call_binding(e_call, e_fn)
    p_names = {n.id for n in ast.walk(p_call) if isinstance(n, ast.Name)}
    assigned = _assigned(e_fn)
    # E's output (stored at the flat offset) and its dims
    offs, out_host = None, None
    for n in ast.walk(e_fn):
        if is_call_to(n, "store") and n.args:
            terms = [t for t in _add_terms(n.args[0]) if isinstance(t, ast.Name) and t.id in e_bind]
            offset = pointer_offset(n.args[0], terms[0].id) if len(terms) == 1 else None
            if isinstance(offset, ast.Name) and isinstance(e_bind[terms[0].id], ast.Name):
                offs, out_host = offset.id, e_bind[terms[0].id].id
                break
    if offs is None:
        return
    try:
        out_dims = _dims(_allocation(launch, out_host)[1])
    except Skip:
        return
    rank = len(out_dims)
    dim_of = {p: m for p, h in e_bind.items() for m in range(rank)
              if isinstance(h, ast.expr) and ast.unparse(h) == f"{out_host}.shape[{m}]"}

    def level(expr: ast.expr, seen: int = 0) -> tuple[str, int] | None:
        """("flat", m): the flat index over dims 0..m; ("coord", m): the coordinate of dim m."""
        if seen > 32:
            return None
        if isinstance(expr, ast.Name):
            if expr.id == offs:
                return ("flat", rank - 1)
            return level(assigned[expr.id], seen + 1) if expr.id in assigned else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mod, ast.FloorDiv)) \
                and isinstance(expr.right, ast.Name) and expr.right.id in dim_of:
            inner = level(expr.left, seen + 1)
            m = dim_of[expr.right.id]
            if inner != ("flat", m) or m == 0:
                return None
            return ("coord", m) if isinstance(expr.op, ast.Mod) else ("flat", m - 1)
        return None

    def coord(expr: ast.expr) -> int | None:
        lv = level(expr)
        return lv[1] if lv is not None and (lv[0] == "coord" or lv == ("flat", 0)) else None

    views: dict[str, str] = {}                        # launch's view name -> the buffer it shows
    for load in [n for n in ast.walk(e_fn) if is_call_to(n, "load") and n.args]:
        terms = _add_terms(load.args[0])
        bases = [t for t in terms if isinstance(t, ast.Name) and t.id in e_bind
                 and isinstance(e_bind[t.id], ast.Name)]
        if len(bases) != 1 or len(terms) != rank + 1:
            continue
        param, host = bases[0].id, e_bind[bases[0].id].id
        buf = host
        if host not in p_names:                        # a view: host = helper(buf, OUT.shape)
            value = _launch_value(launch, host)
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                    and _is_view_helper(tree, value.func.id) and len(value.args) == 2
                    and isinstance(value.args[0], ast.Name) and value.args[0].id in p_names
                    and ast.unparse(value.args[1]) == f"{out_host}.shape"):
                continue
            buf = value.args[0].id
        try:
            buf_dims = _dims(_allocation(launch, buf)[1])
        except Skip:
            continue
        if len(buf_dims) != rank or not all(same(a, b) for a, b in zip(buf_dims, out_dims)):
            continue
        found: set[int] = set()
        for t in terms:
            if t is bases[0]:
                continue
            if not (isinstance(t, ast.BinOp) and isinstance(t.op, ast.Mult)):
                break
            pairs = [(t.left, t.right), (t.right, t.left)]
            k = next((coord(c) for c, s in pairs if coord(c) is not None
                      and _host(e_bind, s) == f"{host}.stride({coord(c)})"), None)
            if k is None or k in found:
                break
            found.add(k)
        if found != set(range(rank)):
            continue
        load.args[0] = ast.BinOp(left=ast.Name(id=param, ctx=ast.Load()), op=ast.Add(),
                                 right=ast.Name(id=offs, ctx=ast.Load()))
        if host != buf:
            views[host] = buf
    for view, buf in views.items():
        for n in ast.walk(e_call):
            if isinstance(n, ast.Name) and n.id == view:
                n.id = buf
        if not any(isinstance(n, ast.Name) and n.id == view and isinstance(n.ctx, ast.Load) for n in ast.walk(launch)):
            launch.body = [s for s in launch.body if not (isinstance(s, ast.Assign) and view in stored_names(s))]


def _launch_value(launch: ast.FunctionDef, name: str) -> ast.expr | None:
    found = [s for s in launch.body if name in stored_names(s)]
    if len(found) == 1 and isinstance(found[0], ast.Assign) and len(found[0].targets) == 1:
        return found[0].value
    return None


def place_producer(tree: ast.Module, p_call: ast.Call, e_stmt: ast.stmt) -> None:
    """Move P's launch statement to E's place when it reads names assigned between the two."""
    launch = launch_function(tree)
    p_stmt = next((s for s in launch.body if isinstance(s, ast.Expr) and s.value is p_call), None)
    if p_stmt is None or e_stmt not in launch.body:
        raise Skip("the producer's launch is not a statement of launch() itself")
    i, j = launch.body.index(p_stmt), launch.body.index(e_stmt)
    between = launch.body[i + 1:j]
    if not loaded_names(p_stmt) & set().union(set(), *(stored_names(s) for s in between)):
        return
    kernels = set(jit_functions(tree))
    launching = {s.name for s in tree.body if isinstance(s, ast.FunctionDef) and s.name not in kernels
                 and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript) for n in ast.walk(s))}
    for stmt in between:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call) and (isinstance(n.func, ast.Subscript) or
                                            (isinstance(n.func, ast.Name) and n.func.id in launching)):
                raise Skip("the fused launch reads names assigned after another kernel's launch")
    launch.body.remove(p_stmt)
    launch.body.insert(launch.body.index(e_stmt), p_stmt)
