"""Editing the contract between ``launch`` and its kernels: signatures, launch
keywords, kernel-call arguments and grids.  Operators that add a template
parameter or a runtime argument go through here so all three stay in step."""

from __future__ import annotations

import ast
import copy
from typing import Any, Callable

from .ast_module import (Skip, arg_names, is_constexpr_arg, jit_functions, kernel_called_from_jit,
                         kernel_launches, launch_function, read_params, write_params)


def _check_plain_signature(kernel: ast.FunctionDef) -> None:
    a = kernel.args
    if a.vararg or a.kwarg or a.defaults or a.kw_defaults or a.kwonlyargs or a.posonlyargs:
        raise Skip(f"kernel {kernel.name} has defaults, keyword-only or variadic parameters")


def call_binding(call: ast.Call, kernel: ast.FunctionDef) -> dict[str, ast.expr]:
    """Kernel parameter name -> the host expression a ``kernel[grid](...)`` call passes."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise Skip(f"launch of {kernel.name} passes *args/**kwargs")
    params = arg_names(kernel)
    if len(call.args) > len(params):
        raise Skip(f"launch of {kernel.name} passes more arguments than it takes")
    bound = dict(zip(params, call.args))
    for kw in call.keywords:
        bound[kw.arg] = kw.value
    return bound


def launch_calls_in_launch(tree: ast.Module, kernel: str) -> list[ast.Call]:
    """The launches of *kernel*; all of them must sit in ``launch`` itself."""
    launch = launch_function(tree)
    calls = [c for c, _ in kernel_launches(tree, kernel)]
    if not calls:
        raise Skip(f"kernel {kernel} is never launched")
    inside = {id(n) for n in ast.walk(launch)} if launch is not None else set()
    if any(id(c) not in inside for c in calls):
        raise Skip(f"kernel {kernel} is launched from a helper, not from launch()")
    if kernel_called_from_jit(tree, kernel):
        raise Skip(f"kernel {kernel} is also called as a device function")
    return calls


def add_constexpr_param(tree: ast.Module, kernel: str, name: str) -> None:
    """Append ``name: tl.constexpr`` to *kernel*'s signature."""
    fn = jit_functions(tree)[kernel]
    _check_plain_signature(fn)
    if name in arg_names(fn):
        raise Skip(f"kernel {kernel} already has a parameter {name}")
    ann = ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="constexpr", ctx=ast.Load())
    fn.args.args.append(ast.arg(arg=name, annotation=ann))


def add_runtime_param(tree: ast.Module, kernel: str, name: str, calls: list[ast.Call]) -> None:
    """Add a runtime (non-constexpr) parameter to *kernel*: before its first constexpr
    when every call passes that and later parameters by keyword, else at the end."""
    fn = jit_functions(tree)[kernel]
    _check_plain_signature(fn)
    if name in arg_names(fn):
        raise Skip(f"kernel {kernel} already has a parameter {name}")
    args = fn.args.args
    first_cx = next((i for i, a in enumerate(args) if is_constexpr_arg(a)), len(args))
    pos = first_cx if all(len(c.args) <= first_cx for c in calls) else len(args)
    args.insert(pos, ast.arg(arg=name, annotation=None))


def pass_keyword(calls: list[ast.Call], name: str, value: ast.expr) -> None:
    """Pass ``name=value`` in every call."""
    for call in calls:
        if any(k.arg == name for k in call.keywords):
            raise Skip(f"a kernel launch already passes {name}")
        call.keywords.append(ast.keyword(arg=name, value=copy.deepcopy(value)))


def add_launch_keyword(tree: ast.Module, name: str) -> None:
    """Add keyword-only parameter *name* to ``launch``."""
    launch = launch_function(tree)
    if launch is None:
        raise Skip("no launch()")
    if name in arg_names(launch):
        raise Skip(f"launch() already takes {name}")
    launch.args.kwonlyargs.append(ast.arg(arg=name, annotation=None))
    launch.args.kw_defaults.append(None)


def add_template_param(tree: ast.Module, kernel: str, name: str, values: list[Any]) -> None:
    """A new template parameter: PARAMS entry, launch keyword, kernel constexpr, passed on."""
    calls = launch_calls_in_launch(tree, kernel)
    space = read_params(tree)
    if name in space:
        raise Skip(f"PARAMS already has {name}")
    add_constexpr_param(tree, kernel, name)
    add_launch_keyword(tree, name)
    pass_keyword(calls, name, ast.Name(id=name, ctx=ast.Load()))
    hints = {k: v for k, v in space.items() if k in ("num_warps", "num_stages")}
    rest = {k: v for k, v in space.items() if k not in hints}
    write_params(tree, {**rest, name: list(values), **hints})


def remove_template_param(tree: ast.Module, name: str, value_expr: ast.expr) -> None:
    """Drop *name* from PARAMS and ``launch``'s signature; launch then binds it itself
    (``name = value_expr`` as its first statement)."""
    launch = launch_function(tree)
    space = read_params(tree)
    if launch is None or name not in space:
        raise Skip(f"{name} is not a template parameter")
    a = launch.args
    for i, arg in enumerate(a.kwonlyargs):
        if arg.arg == name:
            del a.kwonlyargs[i]
            del a.kw_defaults[i]
            break
    else:
        if name in [x.arg for x in a.args]:
            raise Skip(f"launch() takes {name} positionally")
        if a.kwarg is None:
            raise Skip(f"launch() does not take {name} as a keyword")
    del space[name]
    write_params(tree, space)
    assign = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value_expr, lineno=0)
    body = launch.body
    at = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
    body.insert(at, assign)


def grid_site(tree: ast.Module, call: ast.Call) -> tuple[ast.expr, Callable[[ast.expr], None]]:
    """The grid expression of a ``kernel[grid](...)`` call and a setter that replaces it.

    A grid given by name is followed to its single assignment in ``launch``.  The setter
    rewrites that assignment when this call is the name's only reader, else it puts the new
    grid in this call alone (other launches and host code keep the grid they read).
    Lambda grids (meta-parameter callables) are not handled.
    """
    sub = call.func
    assert isinstance(sub, ast.Subscript)
    if isinstance(sub.slice, ast.Name):
        launch = launch_function(tree)
        name = sub.slice.id
        assigns = [n for n in ast.walk(launch) if isinstance(n, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
        if len(assigns) != 1 or len(assigns[0].targets) != 1:
            raise Skip(f"grid {name} is not assigned exactly once")
        node = assigns[0]
        readers = [n for n in ast.walk(launch) if isinstance(n, ast.Name) and n.id == name
                   and isinstance(n.ctx, ast.Load)]
        if readers == [sub.slice]:
            def set_named(expr: ast.expr) -> None:
                node.value = expr
            return node.value, set_named

        def set_here(expr: ast.expr) -> None:
            sub.slice = expr
        return node.value, set_here

    def set_inline(expr: ast.expr) -> None:
        sub.slice = expr
    return sub.slice, set_inline


def grid_dims(expr: ast.expr) -> list[ast.expr]:
    """The per-axis expressions of a tuple/list grid; Skip for anything else."""
    if isinstance(expr, (ast.Tuple, ast.List)) and 1 <= len(expr.elts) <= 3 \
            and not any(isinstance(e, ast.Starred) for e in expr.elts):
        return list(expr.elts)
    raise Skip("grid is not a literal tuple")
