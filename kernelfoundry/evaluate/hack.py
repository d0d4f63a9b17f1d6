"""The hack gate: static AST rules over a candidate's source, before anything runs.

Generated code is hostile.  This gate refuses what a Triton candidate never
needs and what cheats or escapes use: disallowed imports, reflection and
dynamic code (``eval``, ``getattr``, dunder attributes), file/network/process
access, monkeypatching, module-level mutable state, caches, try/except
fallbacks, references to the reference or the verifier, and (in
:mod:`hack_host`) any torch computation in ``launch`` or its helpers.
Every refusal names the line and says why, for the LLM.  The candidate format
is in ``docs/candidate_format.md``; the rules are listed in ``docs/verifier.md``.
"""

from __future__ import annotations

import ast
import re
import time
import types
from dataclasses import dataclass

from ..candidate import HINT_PARAMS, ParamSpaceError, parse_param_space
from .hack_policy import (ALLOWED_MODULES, JIT_DECORATORS, MODULE_MEMBERS, OTHER_DECORATORS,
                          REFUSED_ATTRIBUTES, REFUSED_BUILTINS, REFUSED_IDENTIFIERS,
                          REFUSED_MODULE_WHY, TENSOR_METADATA_METHODS, TL_REFUSED, TORCH_ALLOWED,
                          TRITON_ALLOWED)
from .records import GateResult

MAX_SOURCE_BYTES = 256 * 1024
MAX_REPORTED = 6
DECORATOR_CALLABLE_BUILTINS = frozenset({"min", "max", "int", "bool", "float", "len", "abs", "round"})
_FORMAT_ATTRIBUTE = re.compile(r"\{[^{}]*[.\[]_")


@dataclass(frozen=True)
class Violation:
    """One broken rule: where, which rule, and why (for the LLM)."""

    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def is_jit_function(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if dotted(target) in JIT_DECORATORS:
            return True
    return False


def resolve_triton_language(name: str) -> object | None:
    """The object ``triton.language.a.b`` names in the installed Triton (None if it names nothing).

    Triton is trusted code, already imported by the verifier; walking its attributes runs
    nothing of the candidate's.
    """
    import importlib
    obj: object = importlib.import_module("triton.language")
    for part in name.split(".")[2:]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:                                      # a submodule not imported yet
                obj = importlib.import_module(f"{obj.__name__}.{part}") if isinstance(obj, types.ModuleType) \
                    else None
            except ImportError:
                obj = None
            if obj is None:
                return None
    return obj


class ModuleChecker:
    """Collects violations of the module-wide rules (host rules live in :mod:`hack_host`)."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.violations: list[Violation] = []
        self.modules: dict[str, str] = {}        # local name -> module path it is bound to
        self.members: dict[str, str] = {}        # local name -> "module.member" (from-imports)
        self.jit_names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and is_jit_function(n)}
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def add(self, node: ast.AST, rule: str, message: str) -> None:
        self.violations.append(Violation(getattr(node, "lineno", 0), rule, message))

    # ---- imports ------------------------------------------------------------------------
    @staticmethod
    def module_allowed(name: str) -> bool:
        if name in ALLOWED_MODULES:
            return True
        if not name.startswith("triton.language."):
            return False
        parts = name.split(".")[2:]
        if any(p in TL_REFUSED or p.startswith("_") for p in parts):
            return False
        # By name alone `tl.random.tl` (the compiler core) or `tl.extra.pkgutil` would pass: the
        # path must be the module's own name, so an alias another module imported leads nowhere.
        real = resolve_triton_language(name)
        return isinstance(real, types.ModuleType) and real.__name__ == name

    def refuse_module(self, node: ast.AST, name: str) -> None:
        root = name.split(".")[0]
        why = REFUSED_MODULE_WHY.get(name) or REFUSED_MODULE_WHY.get(root)
        allowed = "torch, triton, triton.language, math, typing, functools, itertools, numbers, dataclasses"
        self.add(node, "import", f"`import {name}` is not allowed{f' ({why})' if why else ''}; "
                                 f"a candidate may import only {allowed}.")

    def check_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not self.module_allowed(alias.name):
                    self.refuse_module(node, alias.name)
                elif alias.asname:
                    self.modules[alias.asname] = alias.name
                else:
                    self.modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
            return
        if node.level:
            self.add(node, "import", "relative imports are not allowed; import only torch, triton and the standard helpers.")
            return
        mod = node.module or ""
        if mod == "__future__":
            return
        if not self.module_allowed(mod):
            self.refuse_module(node, mod)
            return
        for alias in node.names:
            if alias.name == "*":
                self.add(node, "import", f"`from {mod} import *` is not allowed; import names explicitly.")
                continue
            full = f"{mod}.{alias.name}"
            local = alias.asname or alias.name
            if self.module_allowed(full):
                self.modules[local] = full
            elif self.member_allowed(node, mod, alias.name):
                self.members[local] = full

    # ---- module members -----------------------------------------------------------------
    def member_allowed(self, node: ast.AST, mod: str, member: str, *, report: bool = True) -> bool:
        why = None
        if member.startswith("_"):
            why = "private members are not allowed"
        elif mod == "torch" and member not in TORCH_ALLOWED:
            why = ("launch may only allocate (torch.empty, empty_like, empty_strided, zeros, zeros_like), "
                   "use dtypes and launch kernels; all computation must happen in @triton.jit kernels")
        elif mod == "triton" and member not in TRITON_ALLOWED:
            why = ("use PARAMS for tuning; the verifier tunes the parameters itself" if member == "autotune"
                   else "only triton.jit, cdiv, next_power_of_2, heuristics and triton.language are allowed")
        elif (mod == "triton.language" or mod.startswith("triton.language.")) and member in TL_REFUSED:
            why = "compiler internals are not allowed; use the public triton.language ops"
        elif (mod == "triton.language" or mod.startswith("triton.language.")) and isinstance(
                real := resolve_triton_language(f"{mod}.{member}"), types.ModuleType) and not self.module_allowed(
                f"{mod}.{member}"):
            why = (f"it is the module `{real.__name__}`, imported by {mod}; only triton.language and its own "
                   "public submodules are allowed")
        elif not self.module_allowed(mod):          # an intermediate package such as triton.tools
            why = f"only the allowed submodules of {mod} may be used"
        elif mod in MODULE_MEMBERS and MODULE_MEMBERS[mod] is not None and member not in MODULE_MEMBERS[mod]:
            why = ("caches across calls are not allowed (every call must recompute)" if member in
                   ("lru_cache", "cache", "cached_property") else
                   f"only {', '.join(sorted(MODULE_MEMBERS[mod]))} from {mod} are allowed")
        if why and report:
            self.add(node, "module-member", f"`{mod}.{member}` is not allowed: {why}.")
        return why is None

    def check_module_use(self, node: ast.AST, parents: dict[ast.AST, ast.AST]) -> None:
        """A name bound to a module may only be used as ``module.member``."""
        if not (isinstance(node, ast.Name) and node.id in self.modules and isinstance(node.ctx, ast.Load)):
            return
        parent = parents.get(node)
        if not (isinstance(parent, ast.Attribute) and parent.value is node):
            self.add(node, "module-alias", f"the module `{node.id}` may only be used as `{node.id}.member`, "
                                           "not passed around, aliased or returned.")
            return
        mod = self.modules[node.id]
        chain = parent
        while mod and isinstance(chain, ast.Attribute):      # descend through submodules: tl.extra.libdevice
            sub = f"{mod}.{chain.attr}"
            if mod != "torch" and (self.module_allowed(sub) or any(m.startswith(sub + ".") for m in ALLOWED_MODULES)):
                mod = sub
                chain = parents.get(chain)
                continue
            if self.member_allowed(chain, mod, chain.attr) and mod == "torch" and chain.attr == "Tensor":
                if isinstance(parents.get(chain), ast.Attribute):
                    self.add(chain, "module-member", "`torch.Tensor.<method>` is not allowed: it computes with "
                                                     "torch; compute inside a @triton.jit kernel.")
            break

    # ---- names, attributes, strings -------------------------------------------------------
    def check_name(self, node: ast.Name) -> None:
        name = node.id
        if name in REFUSED_BUILTINS:
            self.add(node, "builtin", f"`{name}` is not allowed (dynamic code, reflection or I/O).")
        elif name.startswith("__") and name.endswith("__"):
            self.add(node, "dunder", f"`{name}` is not allowed: dunder names reach interpreter internals.")
        elif name in REFUSED_IDENTIFIERS:
            self.add(node, "reference", f"`{name}` is not allowed: a candidate must not touch the task's "
                                        "reference or the verifier; compute the result in the kernel.")

    def check_attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr.startswith("_"):
            self.add(node, "dunder", f"attribute `.{attr}` is not allowed: private and dunder attributes reach "
                                     "internals (e.g. __class__, __globals__, _C).")
        elif attr in REFUSED_ATTRIBUTES:
            self.add(node, "attribute", f"attribute `.{attr}` is not allowed: it reaches frames, interpreter "
                                        "internals or copies device data to the host.")
        elif attr in REFUSED_IDENTIFIERS:
            self.add(node, "reference", f"`.{attr}` is not allowed: do not touch the reference or the verifier.")
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.add(node, "monkeypatch", f"assigning or deleting `{dotted(node) or '.' + attr}` is not allowed "
                                          "(monkeypatching, function attributes and object state are refused).")

    def check_string(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str):
            return
        if "kernelfoundry" in node.value.lower():
            self.add(node, "reference", "strings naming the verifier's package are not allowed.")
        if _FORMAT_ATTRIBUTE.search(node.value):
            self.add(node, "dunder", "format fields that read private attributes (e.g. '{0.__class__}') "
                                     "are not allowed.")

    # ---- statements --------------------------------------------------------------------
    def check_statement(self, node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.ClassDef):
            self.add(node, "statement", "class definitions are not allowed; write functions and @triton.jit kernels.")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            self.add(node, "state", f"`{type(node).__name__.lower()}` is not allowed: no state may survive "
                                    "between calls.")
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.add(node, "try", "try/except is not allowed: it hides failures (e.g. a fallback to torch "
                                  "when the kernel fails); let errors surface.")
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            self.add(node, "statement", "`with` blocks are not allowed; launch only allocates and launches.")
        elif isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.Yield, ast.YieldFrom)):
            self.add(node, "statement", "async functions and generators are not allowed.")
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) and not in_function:
            self.add(node, "state", "item assignment at module level is not allowed (module-level state).")

    def check_function_defaults(self, fn: ast.FunctionDef | ast.Lambda) -> None:
        for default in [*fn.args.defaults, *(d for d in fn.args.kw_defaults if d is not None)]:
            if not is_constant_expr(default, self):
                self.add(default, "state", "default argument values must be constants: a mutable default "
                                           "(list, dict, tensor) would cache state across calls.")

    def check_decorators(self, fn: ast.FunctionDef) -> None:
        for dec in fn.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            name = dotted(target)
            if name not in JIT_DECORATORS and name not in OTHER_DECORATORS:
                self.add(dec, "decorator", f"decorator `@{name or ast.unparse(dec)}` is not allowed; use "
                                           "@triton.jit (caching and autotuning decorators are refused).")
            elif isinstance(dec, ast.Call):
                self.check_decorator_arguments(dec)

    def check_decorator_arguments(self, dec: ast.Call) -> None:
        """Callbacks in decorator options (heuristics, launch_metadata) receive the kernel's tensor
        arguments at launch: they may only compute constexpr values from shapes, never call torch."""
        for arg in [*dec.args, *(k.value for k in dec.keywords)]:
            for node in ast.walk(arg):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = dotted(func) or ""
                if (isinstance(func, ast.Name) and func.id in DECORATOR_CALLABLE_BUILTINS
                        or name in ("triton.cdiv", "triton.next_power_of_2")
                        or (name.split(".")[0] in self.modules and self.modules[name.split(".")[0]] == "math")
                        or isinstance(func, ast.Attribute) and func.attr in TENSOR_METADATA_METHODS):
                    continue
                self.add(node, "decorator", f"`{ast.unparse(func)}(...)` in decorator options is not allowed: "
                                            "heuristics may only compute constexpr values from argument shapes "
                                            "(min, max, int, triton.cdiv, x.stride(), x.numel(), ...).")

    def check_module_level(self) -> None:
        """Top level: docstring, imports, constant assignments, PARAMS, function definitions."""
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef)):
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                continue
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if not all(isinstance(t, ast.Name) for t in targets):
                    continue                       # attribute/subscript stores are reported elsewhere
                names = [t.id for t in targets]
                if stmt.value is None:
                    continue
                if names == ["PARAMS"]:
                    if not isinstance(stmt.value, ast.Dict):
                        self.add(stmt, "params", "PARAMS must be a literal dict of name -> list of values.")
                    continue
                if "PARAMS" in names or not is_constant_expr(stmt.value, self):
                    self.add(stmt, "state", f"module-level `{names[0]} = ...` is not allowed: only constants "
                                            "(numbers, strings, tuples, dtypes, tl.constexpr) may live at module "
                                            "level; mutable state could cache results across calls.")
                continue
            if isinstance(stmt, (ast.ClassDef, ast.Try, ast.Global, ast.AsyncFunctionDef, ast.With)):
                continue                           # reported by check_statement
            self.add(stmt, "statement", f"module-level `{type(stmt).__name__}` statement is not allowed: the "
                                        "module may only import, define constants, PARAMS and functions.")

    def check_params_uses(self) -> None:
        for fn in self.functions.values():
            for node in ast.walk(fn):
                if isinstance(node, ast.Name) and node.id == "PARAMS":
                    self.add(node, "params", "functions must not read or change PARAMS; launch receives the "
                                             "chosen values as keyword arguments.")

    def check_jit_bodies(self) -> None:
        """Kernels use triton.language, their arguments and other kernels: no torch, no host helpers."""
        host = set(self.functions) - self.jit_names
        for name in self.jit_names:
            for node in ast.walk(self.functions[name]):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    if self.modules.get(node.id) == "torch" or self.members.get(node.id, "").startswith("torch."):
                        self.add(node, "kernel", f"`{node.id}` inside @triton.jit kernel `{name}`: kernels must use "
                                                 "triton.language only.")
                    elif node.id in host:
                        self.add(node, "kernel", f"kernel `{name}` calls host function `{node.id}`; kernels may "
                                                 "call only triton.language ops and other @triton.jit functions.")

    def check_while_true(self, fn: ast.FunctionDef) -> None:
        for node in ast.walk(fn):
            if isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and node.test.value:
                self.add(node, "loop", "`while True` in host code is not allowed: loops in launch must be bounded.")

    def run(self) -> list[Violation]:
        parents = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.check_import(node)
        self.check_module_level()
        for node in ast.walk(self.tree):
            in_function = any(isinstance(p, (ast.FunctionDef, ast.Lambda)) for p in _ancestors(node, parents))
            self.check_statement(node, in_function)
            if isinstance(node, ast.Name):
                self.check_name(node)
                self.check_module_use(node, parents)
            elif isinstance(node, ast.Attribute):
                self.check_attribute(node)
            elif isinstance(node, ast.Constant):
                self.check_string(node)
            elif isinstance(node, ast.FunctionDef):
                self.check_decorators(node)
                self.check_function_defaults(node)
                if node.name in REFUSED_IDENTIFIERS:
                    self.add(node, "reference", f"a function may not be named `{node.name}`.")
            elif isinstance(node, ast.Lambda):
                self.check_function_defaults(node)
            elif isinstance(node, ast.arg) and node.arg in REFUSED_IDENTIFIERS:
                self.add(node, "reference", f"an argument may not be named `{node.arg}`.")
        self.check_params_uses()
        self.check_jit_bodies()
        for fn in ast.walk(self.tree):
            if isinstance(fn, ast.FunctionDef) and fn.name not in self.jit_names:
                self.check_while_true(fn)
        return self.violations


def _ancestors(node, parents):
    while node in parents:
        node = parents[node]
        yield node


def is_constant_expr(node: ast.AST, checker: ModuleChecker) -> bool:
    """Immutable module-level values: literals, tuples, arithmetic, dtypes, ``tl.constexpr(c)``."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(is_constant_expr(e, checker) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return is_constant_expr(node.operand, checker)
    if isinstance(node, ast.BinOp):
        return is_constant_expr(node.left, checker) and is_constant_expr(node.right, checker)
    if isinstance(node, ast.Name):
        return node.id not in checker.functions and node.id not in checker.modules
    if isinstance(node, ast.Attribute):
        root = dotted(node)
        return root is not None and root.split(".")[0] in checker.modules
    if isinstance(node, ast.Call):
        return (dotted(node.func) in ("tl.constexpr", "triton.language.constexpr", "constexpr")
                and all(is_constant_expr(a, checker) for a in node.args) and not node.keywords)
    return False


def _param_names(source: str) -> set[str]:
    try:
        return set(parse_param_space(source))
    except ParamSpaceError:
        return set(HINT_PARAMS)


def find_violations(source: str) -> list[Violation]:
    """All rule violations in *source* (which must parse; raises SyntaxError otherwise)."""
    from .hack_host import HostChecker
    if len(source.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
        return [Violation(0, "size", f"the source is over {MAX_SOURCE_BYTES // 1024} KB; kernels are far smaller.")]
    tree = ast.parse(source)
    try:
        checker = ModuleChecker(tree)
        violations = checker.run()
        violations += HostChecker(checker, _param_names(source)).run()
    except RecursionError:
        return [Violation(0, "size", "the source is nested too deeply to analyse.")]
    seen, unique = set(), []
    for v in sorted(violations, key=lambda v: (v.line, v.rule, v.message)):
        if (v.line, v.message) not in seen:
            seen.add((v.line, v.message))
            unique.append(v)
    return unique


def hack_gate(source: str) -> GateResult:
    """Run the static rules; the gate result's reason lists the first few violations.

    A source that does not parse raises SyntaxError (the pipeline reports it
    as a load failure).
    """
    start = time.perf_counter()
    violations = find_violations(source)
    seconds = time.perf_counter() - start
    if not violations:
        return GateResult(name="hack", passed=True, reason="", seconds=seconds)
    shown = "; ".join(str(v) for v in violations[:MAX_REPORTED])
    more = f" (and {len(violations) - MAX_REPORTED} more)" if len(violations) > MAX_REPORTED else ""
    reason = f"refused by the static checks: {shown}{more}"
    return GateResult(name="hack", passed=False, reason=reason, seconds=seconds,
                      details={"violations": [{"line": v.line, "rule": v.rule, "message": v.message}
                                              for v in violations]})
