"""A kernel candidate as the built-in mutator sees it: an AST with its PARAMS,
``@triton.jit`` kernels and ``launch``, and a renderer that writes an edited tree
back to source while keeping every untouched top-level statement as written.

Nothing here executes candidate code: it parses, walks and unparses.
"""

from __future__ import annotations

import ast
import copy
import json
from dataclasses import dataclass
from typing import Any

from ..ast_safe import parse as safe_parse
from ..candidate import ParamSpaceError, parse_param_space, validate_param_space
from .ast_format import tidy, wrap_long_lines


class Skip(Exception):
    """An operator does not apply to this source; the message says why."""


@dataclass
class KernelModule:
    """A parsed candidate.  ``tree`` is never edited in place: use :meth:`clone`."""

    source: str
    tree: ast.Module
    space: dict[str, list[Any]]

    @classmethod
    def parse(cls, source: str) -> "KernelModule":
        """Parse *source*; raise :class:`Skip` when it is not a usable candidate."""
        try:
            tree = safe_parse(source)
        except SyntaxError as exc:
            raise Skip(f"source does not parse (line {exc.lineno}: {exc.msg})") from None
        try:
            space = parse_param_space(source)
        except ParamSpaceError as exc:
            raise Skip(f"PARAMS unusable: {exc}") from None
        if launch_function(tree) is None:
            raise Skip("source defines no top-level `def launch(...)`")
        if not jit_functions(tree):
            raise Skip("source defines no @triton.jit kernel")
        return cls(source=source, tree=tree, space=space)

    def clone(self) -> ast.Module:
        """A deep copy of the tree for an operator to edit."""
        return copy.deepcopy(self.tree)

    def render(self, new_tree: ast.Module) -> str:
        """Source for *new_tree*, reusing this module's text for unchanged statements."""
        return render(self.source, self.tree, new_tree)


# ----------------------------------------------------------------------------- queries

def is_jit(fn: ast.AST) -> bool:
    """True for a function decorated with ``@triton.jit`` / ``@jit`` (with or without a call)."""
    if not isinstance(fn, ast.FunctionDef):
        return False
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute) and target.attr == "jit":
            return True
        if isinstance(target, ast.Name) and target.id == "jit":
            return True
    return False


def jit_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {s.name: s for s in tree.body if is_jit(s)}


def launch_function(tree: ast.Module) -> ast.FunctionDef | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "launch":
            return stmt
    return None


def host_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    """Top-level functions that are not kernels (``launch`` and its helpers)."""
    return [s for s in tree.body if isinstance(s, ast.FunctionDef) and not is_jit(s)]


def kernel_launches(tree: ast.Module, kernel: str | None = None) -> list[tuple[ast.Call, str]]:
    """``kernel[grid](...)`` calls in host functions, as (call, kernel name)."""
    kernels = jit_functions(tree)
    out = []
    for fn in host_functions(tree):
        for node in ast.walk(fn):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in kernels
                    and (kernel is None or node.func.value.id == kernel)):
                out.append((node, node.func.value.id))
    return out


def launched_kernels(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Kernels launched from host code (their signatures may grow; helpers' may not)."""
    kernels = jit_functions(tree)
    names = {name for _, name in kernel_launches(tree)}
    return {n: kernels[n] for n in kernels if n in names}


def kernel_called_from_jit(tree: ast.Module, name: str) -> bool:
    """True when another jit function calls kernel *name* directly (as a device helper)."""
    for fn in jit_functions(tree).values():
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
                return True
    return False


def all_names(node: ast.AST) -> set[str]:
    """Every identifier bound or read anywhere under *node* (names, args, functions)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.keyword) and n.arg:
            out.add(n.arg)
    return out


def loaded_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def stored_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def fresh_name(taken: set[str], base: str) -> str:
    """*base*, or *base*_2, _3, ... whichever is not in *taken* (and record it there)."""
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


def arg_names(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    return [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def is_constexpr_arg(arg: ast.arg) -> bool:
    ann = arg.annotation
    return (isinstance(ann, ast.Attribute) and ann.attr == "constexpr") or \
        (isinstance(ann, ast.Name) and ann.id == "constexpr")


def is_call_to(node: ast.AST, *names: str) -> bool:
    """True for a call of ``tl.<name>`` / ``triton.<name>`` / ``tl.math.<name>`` / ``<name>``."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr in names
    return isinstance(f, ast.Name) and f.id in names


def program_id_axis(node: ast.AST) -> int | None:
    """The axis of a ``tl.program_id(axis)`` call, or None for anything else."""
    if not is_call_to(node, "program_id"):
        return None
    args = list(node.args) + [k.value for k in node.keywords if k.arg == "axis"]
    if len(args) != 1 or not isinstance(args[0], ast.Constant) or not isinstance(args[0].value, int):
        return None
    return args[0].value


def statement_lists(node: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list under *node* (function body, loop and branch bodies)."""
    out = []
    for n in ast.walk(node):
        for attr in ("body", "orelse"):
            block = getattr(n, attr, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                out.append(block)
    return out


def uses_dot(tree: ast.AST) -> bool:
    return any(is_call_to(n, "dot", "dot_scaled") for n in ast.walk(tree))


def same(a: ast.AST | None, b: ast.AST | None) -> bool:
    """Structural equality of two AST nodes (positions ignored)."""
    if a is None or b is None:
        return a is b
    return ast.dump(a) == ast.dump(b)


# ----------------------------------------------------------------------------- building

class _Substitute(ast.NodeTransformer):
    def __init__(self, subs: dict[str, ast.AST | str]):
        self.subs = subs

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.subs:
            return node
        rep = self.subs[node.id]
        if isinstance(rep, str):
            return ast.copy_location(ast.Name(id=rep, ctx=node.ctx), node)
        if not isinstance(node.ctx, ast.Load):
            raise ValueError(f"cannot substitute an expression for assigned name {node.id}")
        return copy.deepcopy(rep)


def template(code: str, **subs: ast.AST | str) -> list[ast.stmt]:
    """Statements parsed from *code* with placeholder names replaced by names or expressions."""
    tree = safe_parse(code)
    tree = _Substitute(subs).visit(tree)
    return tree.body


def template_expr(code: str, **subs: ast.AST | str) -> ast.expr:
    (stmt,) = template(code, **subs)
    assert isinstance(stmt, ast.Expr)
    return stmt.value


# ----------------------------------------------------------------------------- PARAMS

def params_statement(tree: ast.Module) -> ast.stmt | None:
    found = None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PARAMS" for t in stmt.targets):
            found = stmt
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "PARAMS":
            found = stmt
    return found


def read_params(tree: ast.Module) -> dict[str, list[Any]]:
    stmt = params_statement(tree)
    if stmt is None:
        raise Skip("module has no PARAMS")
    return validate_param_space(ast.literal_eval(stmt.value))


def write_params(tree: ast.Module, space: dict[str, list[Any]]) -> None:
    """Replace the PARAMS literal in *tree* with *space* (validated)."""
    validate_param_space(space)
    stmt = params_statement(tree)
    if stmt is None:
        raise Skip("module has no PARAMS")
    stmt.value = safe_parse(format_params_literal(space), mode="eval").body


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def format_params_literal(space: dict[str, list[Any]]) -> str:
    """``{"BLOCK": [64, 128], ...}`` with double-quoted keys, as the seeds write it."""
    items = ", ".join(f"{json.dumps(k)}: [{', '.join(_literal(v) for v in vals)}]" for k, vals in space.items())
    return "{" + items + "}"


# ----------------------------------------------------------------------------- rendering

def _span(stmt: ast.stmt) -> tuple[int, int]:
    start = stmt.lineno
    for dec in getattr(stmt, "decorator_list", []):
        start = min(start, dec.lineno)
    return start, stmt.end_lineno or stmt.lineno


def _identity(stmt: ast.stmt) -> tuple | None:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return ("def", stmt.name)
    if isinstance(stmt, ast.Assign):
        return ("assign", tuple(ast.dump(t) for t in stmt.targets))
    if isinstance(stmt, ast.AnnAssign):
        return ("assign", (ast.dump(stmt.target),))
    return None


def _unparse(stmt: ast.stmt) -> str:
    if _identity(stmt) == ("assign", (ast.dump(ast.Name(id="PARAMS", ctx=ast.Store())),)):
        try:
            space = validate_param_space(ast.literal_eval(stmt.value))
            return wrap_long_lines(f"PARAMS = {format_params_literal(space)}")
        except (ValueError, ParamSpaceError):
            pass
    return wrap_long_lines(tidy(ast.unparse(stmt)))


def render(source: str, old: ast.Module, new: ast.Module) -> str:
    """Write *new* as source.  Top-level statements equal to one of *old* keep their
    original text (comments included); changed ones keep the comments above them."""
    ast.fix_missing_locations(new)
    lines = source.splitlines(keepends=True)
    spans = [_span(s) for s in old.body]
    if any(b[0] <= a[1] for a, b in zip(spans, spans[1:])):   # statements sharing a line
        return ast.unparse(new) + "\n"
    chunks = []   # (dump, identity, leading text, statement text)
    prev_end = 0
    for stmt, (start, end) in zip(old.body, spans):
        chunks.append((ast.dump(stmt), _identity(stmt), "".join(lines[prev_end:start - 1]),
                       "".join(lines[start - 1:end])))
        prev_end = end
    trailing = "".join(lines[prev_end:])

    used: set[int] = set()
    match: dict[int, int] = {}
    for k, stmt in enumerate(new.body):
        d = ast.dump(stmt)
        for j, chunk in enumerate(chunks):
            if j not in used and chunk[0] == d:
                match[k] = j
                used.add(j)
                break
    replaced: dict[int, int] = {}
    for k, stmt in enumerate(new.body):
        if k in match:
            continue
        ident = _identity(stmt)
        for j, chunk in enumerate(chunks):
            if j not in used and ident is not None and chunk[1] == ident:
                replaced[k] = j
                used.add(j)
                break

    out: list[str] = []
    for k, stmt in enumerate(new.body):
        if k in match:
            _, _, lead, text = chunks[match[k]]
        else:
            is_def = isinstance(stmt, (ast.FunctionDef, ast.ClassDef))
            lead = chunks[replaced[k]][2] if k in replaced else ("\n\n" if is_def else "")
            text = _unparse(stmt) + "\n"
        if out and not out[-1].endswith("\n"):
            out.append("\n")
        out.append(lead + text)
    text = "".join(out) + trailing
    return text if text.endswith("\n") else text + "\n"
