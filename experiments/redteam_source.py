"""Source helpers of the red team's transformations (experiments/redteam_transforms.py): a parsed
candidate module with its kernels and launch, small AST builders and queries."""

from __future__ import annotations

import ast
from typing import Callable

from kernelfoundry.evaluate import dotted  # noqa: F401  (re-exported for the transformations)


class NotApplicable(Exception):
    """The transformation has nothing to rewrite in this source."""


# ---- source helpers -------------------------------------------------------------------------------

class Module:
    """A parsed candidate: its tree, jit kernels, launch, the triton.language alias and the kernels
    that launch starts (``kernel[grid](...)``)."""

    def __init__(self, source: str):
        self.tree = ast.parse(source)
        self.tl = "tl"
        for node in self.tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "triton.language" and alias.asname:
                        self.tl = alias.asname
        self.functions = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        self.jit = {name: fn for name, fn in self.functions.items() if any(
            "jit" in (dotted(d.func if isinstance(d, ast.Call) else d) or "") for d in fn.decorator_list)}
        self.launch = self.functions.get("launch")
        if self.launch is None:
            raise NotApplicable("no launch")

    def source(self) -> str:
        ast.fix_missing_locations(self.tree)
        return ast.unparse(self.tree) + "\n"

    def is_tl(self, node: ast.AST, member: str) -> bool:
        return dotted(node) == f"{self.tl}.{member}"

    def tl_call(self, member: str, *args: ast.expr, **kwargs: ast.expr) -> ast.Call:
        return ast.Call(func=ast.Attribute(value=ast.Name(self.tl, ast.Load()), attr=member, ctx=ast.Load()),
                        args=list(args), keywords=[ast.keyword(arg=k, value=v) for k, v in kwargs.items()])

    def launches(self) -> list[tuple[ast.Call, str]]:
        """Every ``kernel[grid](...)`` call in launch, with the kernel's name."""
        out = []
        for node in ast.walk(self.launch):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in self.jit):
                out.append((node, node.func.value.id))
        return out

    def launched(self) -> list[ast.FunctionDef]:
        names = []
        for _, name in self.launches():
            if name not in names:
                names.append(name)
        return [self.jit[n] for n in names]

    def inputs(self) -> list[str]:
        """launch's positional parameters (the task inputs)."""
        args = self.launch.args
        return [a.arg for a in [*args.posonlyargs, *args.args]]

    def add_function(self, code: str, *, before: str | None = None) -> None:
        """Insert module-level function(s) parsed from *code* before function *before* (or before launch)."""
        new = ast.parse(code).body
        target = self.functions.get(before) if before else self.launch
        index = self.tree.body.index(target)
        self.tree.body[index:index] = new
        for node in new:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node

    def params(self) -> ast.Dict:
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PARAMS" for t in node.targets):
                if isinstance(node.value, ast.Dict):
                    return node.value
        raise NotApplicable("no PARAMS")

    def set_param(self, name: str, values: list) -> None:
        params = self.params()
        for key, value in zip(params.keys, params.values):
            if isinstance(key, ast.Constant) and key.value == name:
                params.values[params.keys.index(key)] = ast.parse(repr(values), mode="eval").body
                return
        params.keys.append(ast.Constant(name))
        params.values.append(ast.parse(repr(values), mode="eval").body)


def stmt(code: str) -> list[ast.stmt]:
    return ast.parse(code).body


def expr(code: str) -> ast.expr:
    return ast.parse(code, mode="eval").body


def range_args(loop: ast.For) -> tuple[ast.expr, ast.expr, ast.expr] | None:
    """(start, stop, step) of ``for v in range(...)`` with a plain loop variable, else None."""
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and isinstance(loop.target, ast.Name) and not it.keywords and 1 <= len(it.args) <= 3):
        return None
    args = list(it.args)
    if len(args) == 1:
        return ast.Constant(0), args[0], ast.Constant(1)
    if len(args) == 2:
        return args[0], args[1], ast.Constant(1)
    return args[0], args[1], args[2]


def contains(node: ast.AST, pred: Callable[[ast.AST], bool]) -> bool:
    return any(pred(n) for n in ast.walk(node))


def is_store(mod: Module, node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (mod.is_tl(node.func, "store") or (dotted(node.func) or "").startswith(
        f"{mod.tl}.atomic_"))


def is_dot(mod: Module, node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and mod.is_tl(node.func, "dot")


def loops_in(fn: ast.FunctionDef) -> list[ast.For]:
    return [n for n in ast.walk(fn) if isinstance(n, ast.For)]


def replace_in_parent(root: ast.AST, old: ast.stmt, new: list[ast.stmt]) -> None:
    for node in ast.walk(root):
        for fname, value in ast.iter_fields(node):
            if isinstance(value, list) and old in value:
                i = value.index(old)
                value[i:i + 1] = new
                return
    raise NotApplicable("statement not found")
