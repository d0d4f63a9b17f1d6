"""The transformation library of experiments/redteam.py: source rewrites of honest seed kernels
into cheats, one cheat pattern each (see :data:`TRANSFORMS`).

A transformation takes (source, task) and returns the rewritten source, or raises
:class:`NotApplicable` when the seed has nothing it can rewrite.  Its kind says what the
verifier must do with the result: ``inflate`` (correct, so scored honestly, within 10% of its
baseline, or rejected) or ``wrong`` (wrong somewhere the verifier does not compare, or computes
with torch: must be rejected).
"""

from __future__ import annotations

import ast
import copy
import math
from dataclasses import dataclass, field
from typing import Callable

from kernelfoundry.task import Task


from experiments.redteam_source import (  # noqa: E402
    Module, NotApplicable, contains, dotted, expr, is_dot, is_store, loops_in, range_args, replace_in_parent, stmt,
)


# ---- the transformations ------------------------------------------------------------------------------

@dataclass
class Transform:
    name: str
    kind: str                     # "inflate": scored honestly or rejected; "wrong": must be rejected
    doc: str
    apply: Callable[[str, Task], str]
    # the honest baseline made from the seed: the seed, the same PARAMS change, or an honest twin
    baseline: Callable[[str, Task], str] = field(default=lambda s, task: s)


def t_shared_site_dead_load(source: str, task: Task) -> str:
    """All loads go through one jit helper (one source line); each launched kernel first loads
    element 0 of every pointer it loads from through it, so every program's first sector at that
    site is the same."""
    mod = Module(source)
    count = 0
    loaded: dict[str, set[str]] = {}
    for name, fn in mod.jit.items():
        params = {a.arg for a in fn.args.args}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and mod.is_tl(node.func, "load") and node.args:
                kw = {k.arg: k.value for k in node.keywords}
                loaded.setdefault(name, set()).update(n.id for n in ast.walk(node.args[0])
                                                      if isinstance(n, ast.Name) and n.id in params)
                node.func = ast.Name("rt_load_site", ast.Load())
                node.args = [node.args[0], kw.get("mask", ast.Constant(None)), kw.get("other", ast.Constant(None))]
                node.keywords = []
                count += 1
    if not count:
        raise NotApplicable("no tl.load")
    for fn in mod.launched():
        ptrs = sorted(p for p in loaded.get(fn.name, ()) if p.endswith("_ptr"))
        fn.body[_body_start(fn):_body_start(fn)] = [s for p in ptrs for s in stmt(
            f"rt_dead_{p} = rt_load_site({p}, None, None)")]
    mod.add_function(f"@triton.jit\ndef rt_load_site(ptrs, mask, other):\n"
                     f"    return {mod.tl}.load(ptrs, mask=mask, other=other)\n", before=next(iter(mod.jit)))
    return mod.source()


def _body_start(fn: ast.FunctionDef) -> int:
    """Index of the first statement after a docstring."""
    first = fn.body[0]
    return 1 if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else 0


def t_separate_dead_load(source: str, task: Task) -> str:
    """Each launched kernel first loads element 0 of every pointer it loads from, on its own line."""
    mod = Module(source)
    done = False
    for fn in mod.launched():
        params = {a.arg for a in fn.args.args}
        ptrs = sorted({n.id for call in ast.walk(fn) if isinstance(call, ast.Call) and mod.is_tl(call.func, "load")
                       and call.args for n in ast.walk(call.args[0]) if isinstance(n, ast.Name) and n.id in params
                       and n.id.endswith("_ptr")})
        for p in ptrs:
            fn.body[_body_start(fn):_body_start(fn)] = stmt(f"rt_dead_{p} = {mod.tl}.load({p})")
            done = True
    if not done:
        raise NotApplicable("no pointer loads")
    return mod.source()


def t_for_to_while(source: str, task: Task) -> str:
    """Every ``for v in range(a, b, s)`` in a kernel becomes ``v = a; while v < b: ...; v += s``."""
    mod = Module(source)
    count = 0
    for fn in mod.jit.values():
        for loop in loops_in(fn):
            args = range_args(loop)
            if args is None or contains(loop, lambda n: isinstance(n, (ast.Continue, ast.Break))):
                continue
            start, stop, step = args
            v = loop.target.id
            body = loop.body + stmt(f"{v} += {ast.unparse(step)}")
            new = stmt(f"{v} = {ast.unparse(start)}") + [ast.While(test=expr(f"{v} < {ast.unparse(stop)}"),
                                                                   body=body, orelse=[])]
            replace_in_parent(fn, loop, new)
            count += 1
    if not count:
        raise NotApplicable("no range loops")
    return mod.source()


def t_idle_extra_trip(source: str, task: Task) -> str:
    """Every range loop gets one extra trip, trip 1, that does nothing."""
    mod = Module(source)
    count = 0
    for fn in mod.jit.values():
        for k, loop in enumerate(loops_in(fn)):
            args = range_args(loop)
            if args is None:
                continue
            start, stop, step = (ast.unparse(a) for a in args)
            v, i = loop.target.id, f"rt_i{k}"
            inner = stmt(f"{v} = {start} + {step} * ({i} - ({i} > 1))") + loop.body
            new = ast.For(target=ast.Name(i, ast.Store()),
                          iter=expr(f"range(0, ({stop} - ({start}) + {step} - 1) // {step} + 1)"),
                          body=[ast.If(test=expr(f"{i} != 1"), body=inner, orelse=[])], orelse=[])
            replace_in_parent(fn, loop, [new])
            count += 1
    if not count:
        raise NotApplicable("no range loops")
    return mod.source()


def t_sampling_detector(source: str, task: Task) -> str:
    """Loops without stores run their body only on trips that follow the previous trip: every trip
    of a full run, only a few of the trace's sampled trips."""
    mod = Module(source)
    count = 0
    for fn in mod.jit.values():
        for k, loop in enumerate(loops_in(fn)):
            args = range_args(loop)
            if args is None or contains(loop, lambda n: is_store(mod, n)):
                continue
            start, _, step = (ast.unparse(a) for a in args)
            v, prev = loop.target.id, f"rt_prev{k}"
            loop.body = [ast.If(test=expr(f"{v} - {prev} == {step}"), body=loop.body, orelse=[])] + stmt(
                f"{prev} = {v}")
            replace_in_parent(fn, loop, stmt(f"{prev} = {start} - {step}") + [loop])
            count += 1
    if not count:
        raise NotApplicable("no store-free range loops")
    return mod.source()


def t_sampling_detector_dot(source: str, task: Task) -> str:
    """Loops with a tl.dot keep their loads but run the dot only on trips that follow the previous one."""
    mod = Module(source)
    count = 0
    for fn in mod.jit.values():
        for k, loop in enumerate(loops_in(fn)):
            args = range_args(loop)
            if args is None:
                continue
            start, _, step = (ast.unparse(a) for a in args)
            v, prev = loop.target.id, f"rt_prev{k}"
            body = []
            hit = False
            for s in loop.body:
                if contains(s, lambda n: is_dot(mod, n)):
                    body.append(ast.If(test=expr(f"{v} - {prev} == {step}"), body=[s], orelse=[]))
                    hit = True
                else:
                    body.append(s)
            if not hit:
                continue
            loop.body = body + stmt(f"{prev} = {v}")
            replace_in_parent(fn, loop, stmt(f"{prev} = {start} - {step}") + [loop])
            count += 1
    if not count:
        raise NotApplicable("no dot loops")
    return mod.source()


def _first_numel_threshold(task: Task) -> int:
    target = max(task.target_shapes, key=task.input_bytes)
    return max(1, math.prod(task.inputs[0].concrete_shape(target)) // 4)


def t_target_shape_shortcut(source: str, task: Task) -> str:
    """At target-sized inputs only (a quarter of the target's first input or more: far above every
    check and span shape), every launch's first grid dimension shrinks to 5/8."""
    mod = Module(source)
    first = mod.inputs()[0]
    changed = False
    for call, _ in mod.launches():
        grid = call.func.slice
        if isinstance(grid, ast.Lambda):
            continue
        call.func.slice = ast.Call(func=ast.Name("rt_shrink", ast.Load()), args=[grid, ast.Name("rt_big", ast.Load())],
                                   keywords=[])
        changed = True
    if not changed:
        raise NotApplicable("no tuple grids")
    mod.launch.body[_body_start(mod.launch):_body_start(mod.launch)] = stmt(
        f"rt_big = {first}.numel() >= {_first_numel_threshold(task)}")
    mod.add_function("def rt_shrink(grid, big):\n    if big:\n"
                     "        return (max(1, grid[0] * 5 // 8),) + tuple(grid[1:])\n    return grid\n")
    return mod.source()


def t_span_evasion_assert(source: str, task: Task) -> str:
    """launch asserts every input dimension is at least 2, so the grid probes with a symbol set
    to 1 fail and the span shape cannot be derived."""
    mod = Module(source)
    names = [n for n, spec in zip(mod.inputs(), task.inputs) if spec.shape]
    if not names:
        raise NotApplicable("no shaped inputs")
    mod.launch.body[_body_start(mod.launch):_body_start(mod.launch)] = [
        s for n in names for s in stmt(f"assert min({n}.shape) >= 2, 'degenerate input'")]
    return mod.source()


def t_span_grid_padding(source: str, task: Task) -> str:
    """Every launch pads its first grid dimension to at least 257 programs; the padding programs
    do nothing.  The span run then asks for more programs than its budget and is skipped."""
    mod = Module(source)
    done = False
    for call, name in mod.launches():
        fn = mod.jit[name]
        grid = call.func.slice
        if isinstance(grid, ast.Lambda) or any(isinstance(d, ast.Call) and "heuristics" in (dotted(d.func) or "")
                                               for d in fn.decorator_list):
            continue
        if "rt_real" not in {a.arg for a in fn.args.args}:
            fn.args.args.append(ast.arg("rt_real"))
            start = _body_start(fn)
            fn.body[start:] = [ast.If(test=expr(f"{mod.tl}.program_id(0) < rt_real"), body=fn.body[start:], orelse=[])]
        call.func.slice = expr(f"rt_pad({ast.unparse(grid)})")
        call.keywords.append(ast.keyword(arg="rt_real", value=expr(f"({ast.unparse(grid)})[0]")))
        done = True
    if not done:
        raise NotApplicable("no tuple grids")
    mod.add_function("def rt_pad(grid):\n    return (max(grid[0], 257),) + tuple(grid[1:])\n")
    return mod.source()


def _dot_operand(mod: Module, node: ast.expr) -> ast.expr:
    return expr(f"{mod.tl}.max({mod.tl}.expand_dims(({ast.unparse(node)}) * 0.00390625, 2), axis=2)"
                f".to({mod.tl}.float16)")


def t_cast_fp16_before_dot(source: str, task: Task) -> str:
    """Every tl.dot gets its operands cast to fp16."""
    mod = Module(source)
    count = 0
    for node in ast.walk(mod.tree):
        if is_dot(mod, node) and len(node.args) >= 2:
            node.args[0] = expr(f"({ast.unparse(node.args[0])}).to({mod.tl}.float16)")
            node.args[1] = expr(f"({ast.unparse(node.args[1])}).to({mod.tl}.float16)")
            count += 1
    if not count:
        raise NotApplicable("no tl.dot")
    return mod.source()


class _Launder(ast.NodeTransformer):
    def __init__(self, mod: Module):
        self.mod, self.count = mod, 0

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if is_dot(self.mod, node) and len(node.args) >= 2:
            self.count += 1
            node.args[0] = _dot_operand(self.mod, node.args[0])
            node.args[1] = _dot_operand(self.mod, node.args[1])
            return ast.BinOp(left=node, op=ast.Mult(), right=ast.Constant(65536.0))
        return node


def t_launder_dot(source: str, task: Task) -> str:
    """Every tl.dot's operands are scaled by 2^-8 into fp16's range, passed through a size-1
    tl.max (same values, no loaded-precision tag) and cast to fp16; the product is scaled back."""
    mod = Module(source)
    launder = _Launder(mod)
    launder.visit(mod.tree)
    if not launder.count:
        raise NotApplicable("no tl.dot")
    return mod.source()


def _stages_patch(source: str, task: Task | None = None) -> str:
    mod = Module(source)
    mod.set_param("num_stages", [1, 4])
    return mod.source()


def t_dummy_dot(source: str, task: Task) -> str:
    """Every loop of a launched kernel multiplies a 16x16 zero tile by itself once per trip (the
    result unused), so each loop counts as a dot loop the model pipelines over num_stages."""
    mod = Module(_stages_patch(source))
    count = 0
    for fn in mod.launched():
        loops = [n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While))]
        for loop in loops:
            loop.body += stmt(f"rt_unused = {mod.tl}.dot(rt_zero16, rt_zero16)")
        if loops:
            fn.body[_body_start(fn):_body_start(fn)] = stmt(
                f"rt_zero16 = {mod.tl}.zeros([16, 16], dtype={mod.tl}.float16)")
        count += len(loops)
    if not count:
        raise NotApplicable("no loops")
    return mod.source()


def t_skip_zero_tiles(source: str, task: Task) -> str:
    """``acc += tl.dot(a, b)`` runs only when the A tile has a non-zero element."""
    mod = Module(source)
    count = 0
    for fn in mod.jit.values():
        for node in list(ast.walk(fn)):
            if isinstance(node, ast.AugAssign) and is_dot(mod, node.value) and node.value.args:
                a = ast.unparse(node.value.args[0])
                replace_in_parent(fn, node, [ast.If(test=expr(f"{mod.tl}.max({mod.tl}.abs({a})) > 0"),
                                                    body=[node], orelse=[])])
                count += 1
    if not count:
        raise NotApplicable("no `acc += tl.dot(...)`")
    return mod.source()


class _Pid(ast.NodeTransformer):
    def __init__(self, mod: Module):
        self.mod = mod

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if (self.mod.is_tl(node.func, "program_id") and node.args and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == 0) or (self.mod.is_tl(node.func, "program_id") and any(
                    k.arg == "axis" and isinstance(k.value, ast.Constant) and k.value.value == 0 for k in node.keywords)):
            return ast.Name("rt_pid", ast.Load())
        return node


def t_sample_dodging(source: str, task: Task) -> str:
    """Launched kernels run on 5/8 of their first grid dimension; program p does the work of program
    p, and one program in 64 (p % 64 == 7, never the first or the last) also does a share of the
    remaining 3/8.  The trace samples the first, the last and two random programs: light ones."""
    mod = Module(source)
    done = set()
    for call, name in mod.launches():
        fn = mod.jit[name]
        if isinstance(call.func.slice, ast.Lambda) or len(fn.decorator_list) != 1 or contains(
                fn, lambda n: isinstance(n, ast.Call) and mod.is_tl(n.func, "num_programs")):
            continue
        if name not in done:
            body = copy.deepcopy(fn)
            body.name = f"rt_body_{name}"
            body.args.args.append(ast.arg("rt_pid"))
            _Pid(mod).visit(body)
            if not contains(body, lambda n: isinstance(n, ast.Name) and n.id == "rt_pid"):
                continue
            names = [a.arg for a in fn.args.args]
            fwd = ", ".join(names)
            fn.args.args += [ast.arg("rt_light"), ast.arg("rt_per_heavy"), ast.arg("rt_total")]
            fn.body = stmt(
                f"rt_p = {mod.tl}.program_id(0)\n"
                f"rt_body_{name}({fwd}, rt_p)\n"
                f"if rt_p % 64 == 7:\n"
                f"    for rt_r in range(0, rt_per_heavy):\n"
                f"        rt_q = rt_light + (rt_p // 64) * rt_per_heavy + rt_r\n"
                f"        if rt_q < rt_total:\n"
                f"            rt_body_{name}({fwd}, rt_q)\n")
            mod.tree.body.insert(mod.tree.body.index(fn), body)
            done.add(name)
        grid = ast.unparse(call.func.slice)
        call.func.slice = expr(f"rt_dodge({grid})[0]")
        call.keywords += [ast.keyword(arg="rt_light", value=expr(f"rt_dodge({grid})[1]")),
                          ast.keyword(arg="rt_per_heavy", value=expr(f"rt_dodge({grid})[2]")),
                          ast.keyword(arg="rt_total", value=expr(f"rt_dodge({grid})[3]"))]
    if not done:
        raise NotApplicable("no kernel indexed by program_id(0) on a tuple grid")
    mod.add_function(
        "def rt_dodge(grid):\n"
        "    total = grid[0]\n"
        "    light = total - (3 * total) // 8 if total >= 64 else total\n"
        "    per = triton.cdiv(total - light, max((light + 56) // 64, 1))\n"
        "    return (light,) + tuple(grid[1:]), light, per, total\n")
    return mod.source()


def t_tensor_constexpr(source: str, task: Task) -> str:
    """The first launched kernel gets a constexpr parameter holding the first input tensor."""
    mod = Module(source)
    launches = mod.launches()
    if not launches:
        raise NotApplicable("no launches")
    call, name = launches[0]
    fn = mod.jit[name]
    fn.args.args.append(ast.arg("RT_HOLD", annotation=expr(f"{mod.tl}.constexpr")))
    call.keywords.append(ast.keyword(arg="RT_HOLD", value=ast.Name(mod.inputs()[0], ast.Load())))
    return mod.source()


def t_host_torch_dict_key(source: str, task: Task) -> str:
    """launch hides the first input as a dict key (the static inference tracks dict values) and
    calls .max() on it; the result feeds nothing the kernel needs, only the guard can stop it."""
    mod = Module(source)
    x = mod.inputs()[0]
    mod.launch.body[_body_start(mod.launch):_body_start(mod.launch)] = stmt(
        f"rt_holder = {{{x}: 0}}\nrt_peak = 0.0\nfor rt_t in rt_holder:\n    rt_peak = float(rt_t.max())\n")
    return mod.source()


def t_curried_lambda(source: str, task: Task) -> str:
    """torch compute reached through a curried lambda: ``(lambda t: lambda: t)(x)().abs()``."""
    mod = Module(source)
    x = mod.inputs()[0]
    mod.launch.body[_body_start(mod.launch):_body_start(mod.launch)] = stmt(
        f"rt_get = (lambda t: lambda: t)({x})\nrt_abs = rt_get().abs()\n")
    return mod.source()


def t_splat_helper(source: str, task: Task) -> str:
    """torch compute in a helper reached through a ``**`` splat."""
    mod = Module(source)
    x = mod.inputs()[0]
    mod.add_function("def rt_helper(**kw):\n    return kw['t'].sum()\n")
    mod.launch.body[_body_start(mod.launch):_body_start(mod.launch)] = stmt(f"rt_total = rt_helper(**{{'t': {x}}})")
    return mod.source()


def t_contiguous_copy(source: str, task: Task) -> str:
    """launch copies its first input with .contiguous() (a copy torch makes, unscored)."""
    mod = Module(source)
    x = mod.inputs()[0]
    mod.launch.body[_body_start(mod.launch):_body_start(mod.launch)] = stmt(f"{x} = {x}.contiguous()")
    return mod.source()

RARE_GROUP = 32


def _rare_trips(source: str, parity: bool) -> str:
    """The store-free innermost range loops of launched kernels, rewritten to idle except on one trip
    in :data:`RARE_GROUP` (*parity*: in odd programs only; even programs keep the loop as it was)."""
    mod = Module(source)
    count = 0
    for fn in mod.launched():
        for k, loop in enumerate(loops_in(fn)):
            args = range_args(loop)
            if args is None or contains(loop, lambda n: is_store(mod, n) or isinstance(n, (ast.Continue, ast.Break))
                                        or (n is not loop and isinstance(n, (ast.For, ast.While)))):
                continue
            start, stop, step = (ast.unparse(a) for a in args)
            v, t, n, j, g = loop.target.id, f"rt_t{k}", f"rt_n{k}", f"rt_j{k}", RARE_GROUP
            new = stmt(f"{n} = ({stop} - ({start}) + {step} - 1) // {step}\n"
                       f"for {t} in range(0, {n}):\n"
                       f"    if ({t} % {g} == {g - 1}) | ({t} == {n} - 1):\n"
                       f"        for {j} in range({t} // {g} * {g}, {t} + 1):\n"
                       f"            {v} = {start} + {j} * {step}\n")
            heavy = new[1].body[0].body[0]
            heavy.body += copy.deepcopy(loop.body)
            if parity:
                branch = stmt(f"if {mod.tl}.program_id(0) % 2 == 1:\n    pass\nelse:\n    pass\n")[0]
                branch.body, branch.orelse = new, [loop]
                new = [branch]
            replace_in_parent(fn, loop, new)
            count += 1
    if not count:
        raise NotApplicable("no store-free innermost range loops")
    return mod.source()


def t_rare_heavy_trips(source: str, task: Task) -> str:
    """Store-free innermost range loops of launched kernels (a K loop, a row-reduction pass) do
    nothing on most trips: the last trip of every group of 32 (and the loop's last trip, for the
    remainder) redoes the group's trips in an inner loop.  Same work in the same order, on one
    trip in 32: the trace's first trips and witness are idle, its middle samples rarely heavy."""
    return _rare_trips(source, parity=False)


def t_parity_rare_trips(source: str, task: Task) -> str:
    """:func:`t_rare_heavy_trips` in odd programs only, the honest loop in even ones: a count taken
    densely from one program and applied to the others is right or wrong by the program's parity."""
    return _rare_trips(source, parity=True)


class _ScratchLoads(ast.NodeTransformer):
    """In a copy of a dot loop: loads from the laundered pointers read their fp16 scratch twins
    (*widen*: cast back to fp32, the honest twin), and every dot's product is scaled back by 2^16."""

    def __init__(self, mod: Module, ptrs: set[str], widen: bool):
        self.mod, self.ptrs, self.widen = mod, ptrs, widen

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if self.mod.is_tl(node.func, "load") and node.args:
            hit = False
            for n in ast.walk(node.args[0]):
                if isinstance(n, ast.Name) and n.id in self.ptrs:
                    n.id, hit = f"rt16_{n.id}", True
            if hit and self.widen:
                return expr(f"({ast.unparse(node)}).to({self.mod.tl}.float32)")
        if is_dot(self.mod, node):
            return ast.BinOp(left=node, op=ast.Mult(), right=ast.Constant(65536.0))
        return node


def _dot_loop_ptrs(mod: Module, params: set[str], loop: ast.For) -> set[str] | None:
    """The pointer parameters (of *params*, those bound to task inputs) that the operands of the
    loop's dots are loaded from (every operand a name assigned in the loop body from tl.load), or None."""
    assigned = {s.targets[0].id: s.value for s in loop.body
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)}
    dots = [n for n in ast.walk(loop) if is_dot(mod, n)]
    if not dots:
        return None
    ptrs: set[str] = set()
    for dot in dots:
        if len(dot.args) != 2 or dot.keywords or not all(isinstance(a, ast.Name) for a in dot.args):
            return None
        for a in dot.args:
            loads = [c for c in ast.walk(assigned.get(a.id, ast.Pass())) if isinstance(c, ast.Call)
                     and mod.is_tl(c.func, "load") and c.args]
            found = {n.id for c in loads for n in ast.walk(c.args[0]) if isinstance(n, ast.Name) and n.id in params}
            if len(found) != 1:
                return None
            ptrs |= found
    return ptrs


def t_fp16_scratch_launder(source: str, task: Task, honest: bool = False) -> str:
    """fp32 matmuls: launch first converts each fp32 input that feeds a tl.dot, scaled by 2^-8,
    into an fp16 scratch buffer (torch.empty, one conversion kernel); the first third of the dot
    loop's trips loads its operands from the scratch buffers (fp16 dots, product scaled back by
    2^16), the rest from the fp32 inputs.  Correct within TF32's tolerance; fp16 dots on loads
    whose values are fp32 task inputs laundered through memory.

    The baseline is the *honest* twin: the same scratch buffers and loads (the same bytes: half
    of them on a third of the trips is a real saving), cast back to fp32 before the dot.  So the
    ratio measures only what the fp16 dots are credited with."""
    mod = Module(source)
    fp32 = {name for name, spec in zip(mod.inputs(), task.inputs) if spec.dtype == "float32"}
    scratch: list[str] = []
    done: dict[str, set[str]] = {}
    tried: set[str] = set()
    for call, name in mod.launches():
        fn = mod.jit[name]
        params = [a.arg for a in fn.args.args]
        bound = dict(zip(params, call.args)) | {kw.arg: kw.value for kw in call.keywords}
        if name not in tried:
            tried.add(name)
            for k, loop in enumerate(loops_in(fn)):
                args = range_args(loop)
                ptrs = _dot_loop_ptrs(mod, {p for p, a in bound.items() if isinstance(a, ast.Name)
                                             and a.id in mod.inputs()}, loop) if args else None
                if not ptrs:
                    continue
                start, stop, step = (ast.unparse(a) for a in args)
                cheap = copy.deepcopy(loop)
                _ScratchLoads(mod, ptrs, honest).visit(cheap)
                split = f"rt_split{k}"
                cheap.iter = expr(f"range({start}, {split}, {step})")
                loop.iter = expr(f"range({split}, {stop}, {step})")
                replace_in_parent(fn, loop, stmt(
                    f"{split} = {start} + ({stop} - ({start}) + {step} - 1) // {step} // 3 * {step}") + [cheap, loop])
                done.setdefault(name, set()).update(ptrs)
            if name in done:
                fn.args.args += [ast.arg(f"rt16_{p}") for p in sorted(done[name])]
        if name not in done:
            continue
        for p in sorted(done[name]):
            arg = bound.get(p)
            if not (isinstance(arg, ast.Name) and arg.id in fp32):
                raise NotApplicable(f"{name}'s {p} is not an fp32 task input")
            call.keywords.append(ast.keyword(arg=f"rt16_{p}", value=ast.Name(f"rt16_{arg.id}", ast.Load())))
            if arg.id not in scratch:
                scratch.append(arg.id)
    if not scratch:
        raise NotApplicable("no tl.dot on loads of fp32 inputs")
    mod.launch.body[_body_start(mod.launch):_body_start(mod.launch)] = [s for x in scratch for s in stmt(
        f"rt16_{x} = torch.empty({x}.shape, device={x}.device, dtype=torch.float16)\n"
        f"rt_to_fp16_scaled[(triton.cdiv({x}.numel(), 1024),)]({x}, rt16_{x}, {x}.numel(), RT_CVT=1024)\n")]
    mod.add_function(
        f"@triton.jit\ndef rt_to_fp16_scaled(src_ptr, dst_ptr, n, RT_CVT: {mod.tl}.constexpr):\n"
        f"    offs = {mod.tl}.program_id(0) * RT_CVT + {mod.tl}.arange(0, RT_CVT)\n"
        f"    v = {mod.tl}.load(src_ptr + offs, mask=offs < n, other=0.0)\n"
        f"    {mod.tl}.store(dst_ptr + offs, (v * 0.00390625).to({mod.tl}.float16), mask=offs < n)\n",
        before=next(iter(mod.jit)))
    return mod.source()


TRANSFORMS: dict[str, Transform] = {t.name: t for t in [
    Transform("shared_site_dead_load", "inflate", "dead first load through a load site shared with the real loads",
              t_shared_site_dead_load),
    Transform("separate_dead_load", "inflate", "dead first load of element 0 on its own line", t_separate_dead_load),
    Transform("for_to_while", "inflate", "range loops rewritten as while loops", t_for_to_while),
    Transform("idle_extra_trip", "inflate", "one extra idle trip (trip 1) in every range loop", t_idle_extra_trip),
    Transform("sampling_detector", "inflate", "store-free loops skip trips that do not follow the previous one",
              t_sampling_detector),
    Transform("sampling_detector_dot", "inflate", "dot loops skip the dot on trips that do not follow the previous one",
              t_sampling_detector_dot),
    Transform("target_shape_shortcut", "wrong", "5/8 of the grid at target-sized inputs only",
              t_target_shape_shortcut),
    Transform("span_evasion_assert", "inflate", "asserts that break the span-shape grid probes",
              t_span_evasion_assert),
    Transform("span_grid_padding", "inflate", "grids padded to 257 programs so the span run is skipped",
              t_span_grid_padding),
    Transform("cast_fp16_before_dot", "inflate", "fp16 casts of tl.dot operands", t_cast_fp16_before_dot),
    Transform("launder_dot", "inflate", "dot operands scaled, laundered through a size-1 max, cast to fp16",
              t_launder_dot),
    Transform("dummy_dot", "inflate", "a 16x16 zero dot in every loop (num_stages 1 and 4 for both)", t_dummy_dot,
              baseline=_stages_patch),
    Transform("skip_zero_tiles", "inflate", "dots skipped on all-zero A tiles", t_skip_zero_tiles),
    Transform("sample_dodging", "inflate", "work moved into 1 in 64 programs, 5/8 of the grid",
              t_sample_dodging),
    Transform("tensor_constexpr", "wrong", "an input tensor passed as a constexpr", t_tensor_constexpr),
    Transform("host_torch_dict_key", "wrong", "torch .max() on an input hidden as a dict key",
              t_host_torch_dict_key),
    Transform("curried_lambda", "wrong", "torch .abs() through a curried lambda", t_curried_lambda),
    Transform("splat_helper", "wrong", "torch .sum() in a helper reached through a ** splat", t_splat_helper),
    Transform("contiguous_copy", "wrong", "the first input copied with .contiguous()", t_contiguous_copy),
    Transform("rare_heavy_trips", "inflate", f"store-free loops idle except one trip in {RARE_GROUP} that runs its group",
              t_rare_heavy_trips),
    Transform("parity_rare_trips", "inflate", "rare_heavy_trips in odd programs only, the loop unchanged in even ones",
              t_parity_rare_trips),
    Transform("fp16_scratch_launder", "inflate", "a third of the fp32 dot trips read fp16 scratch copies of the inputs"
              " (baseline: the same, cast back to fp32 before the dot)", t_fp16_scratch_launder,
              baseline=lambda s, task: t_fp16_scratch_launder(s, task, honest=True)),
]}
