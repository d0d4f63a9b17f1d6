"""The hack gate: the candidate language as an allowlist, checked over the source before anything runs.

Generated code is hostile.  A candidate may use only what :mod:`language`
lists: statements and expressions per context (module level, host code,
``@triton.jit`` kernels, heuristics callbacks), names that are bound in the
module or allowed builtins (a name the module never binds could reach whatever
the runtime puts into its globals), module members and value attributes from
explicit lists, decorators and launch options from lists.  Everything else is
refused with the line and a reason written for the LLM.  :mod:`anticheat_host` adds
the host rule that ``launch`` and its helpers never compute with tensors; both report a
:class:`Violation` (:mod:`anticheat_base`, with :func:`dotted`).
The language is documented in ``docs/candidate_format.md``; the threat model in
``docs/verifier.md``.
"""

from __future__ import annotations

import ast
import builtins
import time

from ...ast_safe import parse as safe_parse
from ...candidate import HINT_PARAMS, ParamSpaceError, parse_param_space
from ..contract.language import (ALLOWED_MODULES, DECORATOR_BUILTINS, HEURISTICS_DECORATORS, HINT_NAMES, HOST_BUILTINS,
                          HOST_VALUE_ATTRS, JIT_DECORATORS, JIT_OPTIONS, KERNEL_BUILTINS, KERNEL_VALUE_ATTRS,
                          LAUNCH_OPTIONS, MODULE_MEMBERS, PATH_ONLY_MODULES, REFUSED_MODULE_WHY, REMOVED_TL_MEMBERS,
                          RESERVED_NAMES, RESERVED_PREFIX, TENSOR_METADATA_ATTRS, TENSOR_METADATA_METHODS, TENSOR_VIEW_ATTRS,
                          TENSOR_VIEW_METHODS)
from .anticheat_atomics import spin_waits, used_atomic_results
from .anticheat_base import Violation, dotted
from .anticheat_host import HostChecker
from .anticheat_text import text_violations
from ...records import GateResult

_PYTHON_BUILTINS = frozenset(dir(builtins))
MAX_SOURCE_BYTES = 256 * 1024
MAX_REPORTED = 6
REFUSED_IDENTIFIERS = frozenset({"reference", "kernelfoundry"})
HOST_ATTRS = TENSOR_METADATA_ATTRS | TENSOR_METADATA_METHODS | TENSOR_VIEW_METHODS | TENSOR_VIEW_ATTRS | HOST_VALUE_ATTRS
METADATA_ATTRS = TENSOR_METADATA_ATTRS | TENSOR_METADATA_METHODS

_COMMON_EXPR = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare, ast.Call, ast.Constant,
                ast.Attribute, ast.Subscript, ast.Name, ast.List, ast.Tuple, ast.Slice, ast.keyword,
                ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_COMMON_STMT = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.If, ast.For, ast.While,
                ast.Pass, ast.Break, ast.Continue, ast.Assert)
KERNEL_NODES = _COMMON_EXPR + _COMMON_STMT
HOST_NODES = _COMMON_EXPR + _COMMON_STMT + (
    ast.Raise, ast.FunctionDef, ast.Lambda, ast.arguments, ast.arg, ast.Dict, ast.Set, ast.ListComp,
    ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.comprehension, ast.Starred, ast.JoinedStr,
    ast.FormattedValue, ast.NamedExpr)
_NODE_WHY = {
    ast.Try: "try/except is not allowed: it hides failures (e.g. a fallback to torch when the kernel fails); "
             "let errors surface",
    ast.With: "`with` blocks are not allowed; launch only allocates and launches",
    ast.ClassDef: "class definitions are not allowed; write functions and @triton.jit kernels",
    ast.Global: "`global` is not allowed: no state may survive between calls",
    ast.Nonlocal: "`nonlocal` is not allowed: no state may survive between calls",
    ast.Yield: "generators are not allowed", ast.YieldFrom: "generators are not allowed",
    ast.AsyncFunctionDef: "async functions are not allowed", ast.Await: "async code is not allowed",
    ast.Import: "imports belong at module level", ast.ImportFrom: "imports belong at module level",
    ast.Delete: "`del` is not allowed",
}


def member_allowed(module: str, member: str) -> bool:
    """May ``module.member`` be used (``module`` an allowed module path)?"""
    if member.startswith("_"):
        return False
    allowed = MODULE_MEMBERS.get(module, frozenset())
    if allowed is None:
        return True
    return member in allowed


def _bound_in(fn: ast.FunctionDef | ast.Lambda) -> set[str]:
    """Every name a function binds anywhere inside it (parameters, assignments, loops, nested scopes)."""
    bound: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef) and node is not fn:
            bound.add(node.name)
    return bound


class ModuleChecker:
    """Collects violations of the language rules (host-compute rules live in :mod:`anticheat_host`)."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.violations: list[Violation] = []
        self.modules: dict[str, str] = {}        # local name -> module path it is bound to
        self.members: dict[str, str] = {}        # local name -> "module.member" (from-imports)
        self.constants: set[str] = set()
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.jit_names: set[str] = set()         # known once the imports are read (run)

    def add(self, node: ast.AST, rule: str, message: str) -> None:
        self.violations.append(Violation(getattr(node, "lineno", 0), rule, message))

    def resolve(self, node: ast.AST) -> str | None:
        """The full module path a Name/Attribute chain starts from (``tl.load`` -> ``triton.language.load``)."""
        name = dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        base = self.modules.get(root) or self.members.get(root)
        return None if base is None else base + (f".{rest}" if rest else "")

    def is_jit(self, fn: ast.FunctionDef) -> bool:
        return any(self.resolve(d.func if isinstance(d, ast.Call) else d) == "triton.jit"
                   or dotted(d.func if isinstance(d, ast.Call) else d) in JIT_DECORATORS for d in fn.decorator_list)

    # ---- module level ---------------------------------------------------------------------
    def refuse_module(self, node: ast.AST, name: str) -> None:
        why = REFUSED_MODULE_WHY.get(name) or REFUSED_MODULE_WHY.get(name.split(".")[0])
        allowed = "torch, triton, triton.language (with .math and .extra.libdevice), math, typing"
        self.add(node, "import", f"`import {name}` is not allowed{f' ({why})' if why else ''}; "
                                 f"a candidate may import only {allowed}.")

    def check_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_MODULES or alias.name in PATH_ONLY_MODULES:
                    self.refuse_module(node, alias.name)
                elif alias.asname:
                    self.modules[alias.asname] = alias.name
                else:
                    self.modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
            return
        if node.level:
            self.add(node, "import", "relative imports are not allowed; import only torch, triton and math.")
            return
        mod = node.module or ""
        if mod == "__future__":
            return
        if mod not in ALLOWED_MODULES:
            self.refuse_module(node, mod)
            return
        for alias in node.names:
            local = alias.asname or alias.name
            if self.reserved(node, local):
                continue
            full = f"{mod}.{alias.name}"
            if alias.name == "*":
                self.add(node, "import", f"`from {mod} import *` is not allowed; import names explicitly.")
            elif full in ALLOWED_MODULES and full not in PATH_ONLY_MODULES:
                self.modules[local] = full
            elif full not in ALLOWED_MODULES and member_allowed(mod, alias.name):
                self.members[local] = full
            else:
                self.add(node, "module-member", f"`{full}` is not allowed: {self.member_why(mod, alias.name)}.")

    @staticmethod
    def member_why(mod: str, member: str) -> str:
        if member.startswith("_"):
            return "private members are not allowed"
        if mod == "torch":
            return ("launch may only allocate (torch.empty, empty_like, empty_strided, zeros, zeros_like), "
                    "use dtypes and launch kernels; all computation must happen in @triton.jit kernels")
        if mod == "triton":
            return ("use PARAMS for tuning; the verifier tunes the parameters itself" if member == "autotune"
                    else "only triton.jit, cdiv, next_power_of_2, heuristics and triton.language are allowed")
        if mod == "triton.language.extra.libdevice":
            return ("the verifier's interpreter computes libdevice's float math functions only (erf, tanh, pow, "
                    "expm1, ...), not bit casts, integer conversions or bit tricks; see docs/candidate_format.md")
        if mod.startswith("triton.language") and member in REMOVED_TL_MEMBERS:
            return REMOVED_TL_MEMBERS[member]
        if mod.startswith("triton.language"):
            return ("it is not part of the kernel language this verifier accepts (compiler internals, inline "
                    "assembly and inter-program waiting are refused); see docs/candidate_format.md")
        return f"it is not among the members of {mod} a candidate may use"

    def check_module_level(self) -> None:
        """Top level: docstring, imports, constant assignments, PARAMS, function definitions."""
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.check_import(stmt)
            elif isinstance(stmt, ast.FunctionDef):
                continue
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                continue
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                self.check_constant(stmt)
            elif type(stmt) in _NODE_WHY and not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.add(stmt, "state" if isinstance(stmt, (ast.Global, ast.Nonlocal)) else "statement",
                         _NODE_WHY[type(stmt)] + ".")
            else:
                self.add(stmt, "statement", f"module-level `{type(stmt).__name__}` statement is not allowed: the "
                                            "module may only import, define constants, PARAMS and functions.")
                self.check_expr_tree(stmt, "host", set())     # and name what it would have reached

    def check_constant(self, stmt: ast.Assign | ast.AnnAssign) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if not all(isinstance(t, ast.Name) for t in targets):
            self.add(stmt, "monkeypatch", f"assigning `{ast.unparse(targets[0])}` at module level is not allowed "
                                          "(monkeypatching and module state are refused).")
            return
        names = [t.id for t in targets]
        if any(self.reserved(stmt, n) for n in names):
            return
        if names == ["PARAMS"]:
            if not isinstance(stmt.value, ast.Dict):
                self.add(stmt, "params", "PARAMS must be a literal dict of name -> list of values.")
            else:
                self.walk_constant(stmt.value)
            return
        self.check_expr_tree(stmt.value, "host", set())
        if "PARAMS" in names or not is_constant_expr(stmt.value, self):
            self.add(stmt, "state", f"module-level `{names[0]} = ...` is not allowed: only constants (numbers, "
                                    "strings, tuples, dtypes, tl.constexpr) may live at module level; mutable "
                                    "state could cache results across calls.")
            return
        if isinstance(stmt, ast.AnnAssign):
            self.check_expr_tree(stmt.annotation, "host", set())
        self.constants.update(names)

    def walk_constant(self, node: ast.AST) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant):
                self.check_string(sub)

    # ---- functions --------------------------------------------------------------------------
    def check_functions(self) -> None:
        for name, fn in self.functions.items():
            kind = "kernel" if name in self.jit_names else "host"
            if name in REFUSED_IDENTIFIERS:
                self.add(fn, "reference", f"a function may not be named `{name}`.")
            self.reserved(fn, name)
            self.check_decorators(fn, kind)
            bound = _bound_in(fn)
            self.check_arguments(fn, kind)
            for stmt in fn.body:
                self.check_expr_tree(stmt, kind, bound, fn_name=name)
            if kind == "kernel":
                self.check_atomics(fn)

    def check_arguments(self, fn: ast.FunctionDef, kind: str) -> None:
        args = fn.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None and isinstance(fn, ast.FunctionDef):
                self.check_arg_name(arg)
        if args.kwarg is not None and kind == "host":
            self.add(fn, "splat", f"`**{args.kwarg.arg}` in `{fn.name}` is not allowed: values reached through "
                                  "keyword splats escape the checks; name each parameter.")
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            if not is_constant_expr(default, self):
                self.add(default, "state", "default argument values must be constants: a mutable default (list, "
                                           "dict, tensor) would cache state across calls.")

    def check_arg_name(self, node: ast.arg) -> None:
        name = node.arg
        if self.reserved(node, name):
            return
        if name in REFUSED_IDENTIFIERS or name.startswith("__"):
            self.add(node, "reference", f"an argument may not be named `{name}`.")
        elif name in self.modules or name in self.members:
            self.add(node, "module-alias", f"an argument may not shadow the import `{name}`.")

    def module_name_kind(self, name: str) -> str | None:
        if name in self.modules:
            return "module"
        if name in self.members:
            return "member"
        if name in self.functions:
            return "function"
        if name in self.constants:
            return "constant"
        return None

    def reserved(self, node: ast.AST, name: str) -> bool:
        """Report a binding of a name the verifier or the interpreter owns; True when it was one."""
        if name.startswith(RESERVED_PREFIX) or name in RESERVED_NAMES:
            self.add(node, "reserved", f"the name `{name}` is reserved for the verifier and Triton's interpreter "
                                       f"(names starting with {RESERVED_PREFIX} and {', '.join(sorted(RESERVED_NAMES))}).")
            return True
        return False

    def check_name(self, node: ast.Name, kind: str, bound: set[str]) -> None:
        name = node.id
        if self.reserved(node, name):
            return
        if name.startswith("__"):
            self.add(node, "dunder", f"`{name}` is not allowed: dunder names reach interpreter internals and "
                                     f"names starting with {RESERVED_PREFIX} are reserved for the verifier.")
            return
        if name in REFUSED_IDENTIFIERS:
            self.add(node, "reference", f"`{name}` is not allowed: a candidate must not touch the task's reference "
                                        "or the verifier; compute the result in the kernel.")
            return
        if not isinstance(node.ctx, ast.Load):
            if name in self.modules or name in self.members or name in self.functions:
                self.add(node, "module-alias", f"rebinding `{name}` is not allowed: it names an import or a "
                                               "function of the module.")
            return
        if name == "PARAMS":
            self.add(node, "params", "functions must not read or change PARAMS; launch receives the chosen values "
                                     "as keyword arguments.")
            return
        if name in bound:
            return
        module_kind = self.module_name_kind(name)
        builtins = KERNEL_BUILTINS if kind == "kernel" else HOST_BUILTINS
        if module_kind is None and name not in builtins:
            if name in _PYTHON_BUILTINS:
                self.add(node, "builtin", f"`{name}` is not allowed {'in a kernel' if kind == 'kernel' else 'here'}: "
                                          "it is not among the builtins of the candidate language (no dynamic code, "
                                          f"reflection or I/O); allowed: {', '.join(sorted(builtins))}.")
            else:
                self.add(node, "name", f"`{name}` is not defined in the module: every name must be a parameter, a "
                                       "local, an import, a module constant, a function of the module or one of the "
                                       f"builtins {', '.join(sorted(builtins))}.")
        elif kind == "kernel" and module_kind == "function" and name not in self.jit_names:
            self.add(node, "kernel", f"a kernel calls host function `{name}`; kernels may call only triton.language "
                                     "ops and other @triton.jit functions.")
        elif kind == "kernel" and (self.modules.get(name) == "torch" or self.members.get(name, "").startswith("torch.")):
            self.add(node, "kernel", f"`{name}` inside a @triton.jit kernel: kernels must use triton.language only.")

    def check_attribute_chain(self, node: ast.Attribute, kind: str, parents: dict) -> None:
        """Module chains against the member tables; attributes of values against the context's list."""
        if not isinstance(node.ctx, ast.Load):
            self.add(node, "monkeypatch", f"assigning or deleting `{dotted(node) or '.' + node.attr}` is not "
                                          "allowed (monkeypatching, function attributes and object state are refused).")
        attr = node.attr
        if attr.startswith("_"):
            self.add(node, "dunder", f"attribute `.{attr}` is not allowed: private and dunder attributes reach "
                                     "internals (e.g. __class__, __globals__, _C).")
            return
        if attr in REFUSED_IDENTIFIERS:
            self.add(node, "reference", f"`.{attr}` is not allowed: do not touch the reference or the verifier.")
            return
        chain: list[str] = []
        base: ast.AST = node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        chain.reverse()
        root = base.id if isinstance(base, ast.Name) else None
        module = self.modules.get(root) if root else None
        if module is None and root in self.members:          # `TensorDescriptor.from_tensor`, `tl_float.x`
            self.check_value_attrs(node, chain, kind, f"`{root}`")
            return
        if module is None:
            self.check_value_attrs(node, chain[-1:], kind, "a value")
            return
        # only the outermost attribute of a chain reports, once
        if isinstance(parents.get(node), ast.Attribute):
            return
        path = module
        for i, part in enumerate(chain):
            sub = f"{path}.{part}"
            if sub in ALLOWED_MODULES and not (path == "torch"):
                path = sub
                continue
            if not member_allowed(path, part) or path in PATH_ONLY_MODULES and sub not in ALLOWED_MODULES:
                self.add(node, "module-member", f"`{sub}` is not allowed: {self.member_why(path, part)}.")
                return
            if kind == "kernel" and path == "torch":
                self.add(node, "kernel", "`torch` inside a @triton.jit kernel: kernels must use triton.language only.")
            self.check_value_attrs(node, chain[i + 1:], kind, f"`{sub}`")
            return
        if path in PATH_ONLY_MODULES:
            self.add(node, "module-alias", f"the package `{path}` may only be used to reach its allowed submodules.")

    def check_value_attrs(self, node: ast.AST, attrs: list[str], kind: str, what: str) -> None:
        allowed = KERNEL_VALUE_ATTRS if kind == "kernel" else METADATA_ATTRS if kind == "heuristic" else HOST_ATTRS
        for attr in attrs:
            if attr not in allowed:
                where = {"kernel": "in a kernel", "heuristic": "in a heuristics callback", "host": "in host code"}[kind]
                hint = ("tensor metadata (shape, stride(), numel(), dtype...), views and allocations"
                        if kind != "kernel" else "Triton tensor methods and properties (to, dtype, shape, ...)")
                extra = (f" ({REMOVED_TL_MEMBERS[attr]})" if attr in REMOVED_TL_MEMBERS else
                         " `.contiguous()`, `.clone()` and conversions copy with torch: pass strides to the kernel "
                         "instead." if attr in ("contiguous", "clone", "to", "float", "half", "copy_") else "")
                self.add(node, "attribute", f"attribute `.{attr}` of {what} is not allowed {where}: only {hint} "
                                            f"may be used there.{extra}")
                return

    def check_string(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and "kernelfoundry" in node.value.lower():
            self.add(node, "reference", "strings naming the verifier's package are not allowed.")

    def check_expr_tree(self, root: ast.AST, kind: str, bound: set[str], fn_name: str = "") -> None:
        """Every node under *root* against the context's allowlist, names, attributes and calls."""
        allowed_nodes = KERNEL_NODES if kind == "kernel" else HOST_NODES
        parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(root):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        for node in ast.walk(root):
            if isinstance(node, ast.alias):
                continue                                   # part of an import, refused as a whole
            if not isinstance(node, allowed_nodes):
                why = _NODE_WHY.get(type(node))
                where = "in a @triton.jit kernel" if kind == "kernel" else "in host code"
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = ", ".join(a.name for a in node.names)
                    why = f"`import {getattr(node, 'module', None) or names}` inside a function is not allowed ({why})"
                rule = {ast.Try: "try", ast.Global: "state", ast.Nonlocal: "state",
                        ast.Import: "import", ast.ImportFrom: "import"}.get(type(node), "statement")
                self.add(node, rule, (why or f"`{type(node).__name__}` is not allowed {where}") + ".")
                continue
            if isinstance(node, ast.Name):
                self.check_name(node, kind, bound)
                if kind == "host" and node.id in HINT_NAMES and isinstance(node.ctx, ast.Load):
                    self.check_hint_use(node, parents)
                if node.id in self.modules and not isinstance(parents.get(node), ast.Attribute):
                    self.add(node, "module-alias", f"the module `{node.id}` may only be used as `{node.id}.member`, "
                                                   "not passed around, aliased or returned.")
            elif isinstance(node, ast.Attribute):
                self.check_attribute_chain(node, kind, parents)
            elif isinstance(node, ast.Constant):
                self.check_string(node)
            elif isinstance(node, ast.arg):
                self.check_arg_name(node)
            elif isinstance(node, ast.keyword) and node.arg is None:
                self.add(node, "splat", "`**` splats in calls are not allowed: values reached through keyword "
                                        "splats escape the checks; pass each argument by name.")
            elif isinstance(node, ast.FunctionDef):
                if node.decorator_list:
                    self.add(node, "decorator", f"nested function `{node.name}` may not be decorated.")
                if node.name.startswith(RESERVED_PREFIX) or node.name in REFUSED_IDENTIFIERS:
                    self.add(node, "reference", f"a function may not be named `{node.name}`.")
                self.check_arguments(node, kind)
            elif isinstance(node, ast.Lambda):
                self.check_arguments(node, kind)     # type: ignore[arg-type]
            elif isinstance(node, ast.While) and kind == "host" and isinstance(node.test, ast.Constant) and node.test.value:
                self.add(node, "loop", "`while True` in host code is not allowed: loops in launch must be bounded.")
            elif isinstance(node, ast.Raise) and node.cause is not None:
                self.add(node, "statement", "`raise ... from ...` is not allowed.")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
                self.check_launch(node)
            elif (kind == "host" and isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in self.jit_names):
                self.add(node, "launch", f"`{node.func.id}(...)` calls a kernel like a function; launch it on a grid: "
                                         f"`{node.func.id}[grid](...)`.")

    def check_hint_use(self, node: ast.Name, parents: dict) -> None:
        """A launch hint may only be passed on as the same-named option of a kernel launch or a call
        of a module function: the model sweeps hints on traces made with the first value, so a
        launch that branches on one runs code no check ran."""
        keyword = parents.get(node)
        call = parents.get(keyword)
        ok = (isinstance(keyword, ast.keyword) and keyword.arg == node.id and isinstance(call, ast.Call)
              and (isinstance(call.func, ast.Subscript) and isinstance(call.func.value, ast.Name)
                   and call.func.value.id in self.jit_names
                   or isinstance(call.func, ast.Name) and call.func.id in self.functions))
        if not ok:
            self.add(node, "hint", f"`{node.id}` may only be passed on as `{node.id}={node.id}` to a kernel launch: "
                                   "the verifier checks and traces the first value and the model picks the best, so "
                                   "launch must not compute with it or branch on it.")

    def check_launch(self, call: ast.Call) -> None:
        """``kernel[grid](...)``: a module kernel, its own parameters and the listed launch options only."""
        target = call.func.value
        if not (isinstance(target, ast.Name) and target.id in self.jit_names):
            return                                        # not a launch: checked as an ordinary call
        params = {a.arg for a in [*self.functions[target.id].args.posonlyargs, *self.functions[target.id].args.args,
                                  *self.functions[target.id].args.kwonlyargs]}
        for kw in call.keywords:
            if kw.arg is not None and kw.arg not in params and kw.arg not in LAUNCH_OPTIONS:
                self.add(kw, "launch-option", f"`{kw.arg}=` is neither a parameter of kernel `{target.id}` nor a launch "
                                              f"option ({', '.join(sorted(LAUNCH_OPTIONS))}).")

    def check_atomics(self, fn: ast.FunctionDef) -> None:
        """Spin-waits and atomic results used as values are refused (:mod:`anticheat_atomics`)."""
        for loop in spin_waits(fn, dotted):
            self.add(loop, "spin-wait", "this `while` loop waits for a value another program writes (an atomic or "
                                        "volatile load in its condition): programs must not wait on each other "
                                        "(no spin locks or flags); split the work into separate kernel launches.")
        for node in used_atomic_results(fn, self.resolve):
            self.add(node, "atomic-result", f"`{_src(node)}`: an atomic's result may not be used (atomics go "
                                            "as statements, `tl.atomic_add(ptr, value)`), except as a work ticket: "
                                            "`t = tl.atomic_add(counter_ptr, 1)` on a counter parameter used for "
                                            "nothing else (docs/candidate_format.md). Other results tell a program "
                                            "what other programs did, which the verifier can neither check nor "
                                            "trace; use tl.program_id or tickets for work and separate kernel "
                                            "launches to combine.")

    def check_decorators(self, fn: ast.FunctionDef, kind: str) -> None:
        for dec in fn.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            name = self.resolve(target) or dotted(target)
            if name in ("triton.jit",) or dotted(target) in JIT_DECORATORS:
                if isinstance(dec, ast.Call):
                    if dec.args:
                        self.add(dec, "decorator", "@triton.jit takes only keyword options.")
                    for kw in dec.keywords:
                        if kw.arg not in JIT_OPTIONS or not is_constant_expr(kw.value, self, allow_lists=True):
                            self.add(kw, "decorator", f"`@triton.jit({kw.arg}=...)` is not allowed: only constant "
                                                      f"{', '.join(sorted(JIT_OPTIONS))} options.")
            elif name == "triton.heuristics" or dotted(target) in HEURISTICS_DECORATORS:
                if kind != "kernel" or not isinstance(dec, ast.Call):
                    self.add(dec, "decorator", "@triton.heuristics({...}) must decorate a @triton.jit kernel.")
                    continue
                self.check_heuristics(dec)
            else:
                self.add(dec, "decorator", f"decorator `@{dotted(target) or ast.unparse(dec)}` is not allowed; use "
                                           "@triton.jit and @triton.heuristics (caching and autotuning are refused).")

    def check_heuristics(self, dec: ast.Call) -> None:
        """Heuristics callbacks receive the kernel's tensors at launch: they may only compute constexpr
        values from argument metadata (min, max, int, triton.cdiv, x.stride(), x.numel(), ...)."""
        values = [*dec.args, *(k.value for k in dec.keywords)]
        if len(values) != 1 or not isinstance(values[0], ast.Dict):
            self.add(dec, "decorator", "@triton.heuristics takes one dict literal of name -> lambda.")
            return
        for key, value in zip(values[0].keys, values[0].values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                self.add(dec, "decorator", "@triton.heuristics keys must be string literals.")
            if not (isinstance(value, ast.Lambda) and len(value.args.args) == 1 and not value.args.defaults):
                self.add(value, "decorator", "each heuristics value must be `lambda args: <expression>`.")
                continue
            bad = self.meta_expr_problem(value.body, value.args.args[0].arg)
            if bad is not None:
                self.add(bad, "decorator", f"`{_src(bad)}` in a heuristics callback is not allowed: callbacks may only "
                                           "compute constexpr values from argument metadata (min, max, int, "
                                           "triton.cdiv, args['x'].shape[0], args['n'] % args['BLOCK'], ...).")

    def meta_expr_problem(self, node: ast.AST, param: str) -> ast.AST | None:
        """The first node of a heuristics expression outside the metadata grammar, or None."""
        if isinstance(node, ast.Constant):
            return None
        if isinstance(node, ast.Name):
            return None if node.id in self.constants else node
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Name) and node.value.id == param:
                ok = isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
                return None if ok else node
            return self.meta_expr_problem(node.value, param) or (
                None if isinstance(node.slice, ast.Constant) else node)
        if isinstance(node, ast.Attribute):
            return self.meta_expr_problem(node.value, param) if node.attr in TENSOR_METADATA_ATTRS else node
        if isinstance(node, (ast.BinOp,)):
            return self.meta_expr_problem(node.left, param) or self.meta_expr_problem(node.right, param)
        if isinstance(node, ast.UnaryOp):
            return self.meta_expr_problem(node.operand, param)
        if isinstance(node, (ast.BoolOp,)):
            return next((p for p in (self.meta_expr_problem(v, param) for v in node.values) if p), None)
        if isinstance(node, ast.Compare):
            return next((p for p in (self.meta_expr_problem(v, param) for v in [node.left, *node.comparators]) if p), None)
        if isinstance(node, ast.IfExp):
            return next((p for p in (self.meta_expr_problem(v, param) for v in (node.test, node.body, node.orelse))
                         if p), None)
        if isinstance(node, ast.Tuple):
            return next((p for p in (self.meta_expr_problem(v, param) for v in node.elts) if p), None)
        if isinstance(node, ast.Call) and not node.keywords:
            func = node.func
            full = self.resolve(func) or ""
            if isinstance(func, ast.Attribute) and func.attr in TENSOR_METADATA_METHODS:
                callee_ok = self.meta_expr_problem(func.value, param) is None
            else:
                callee_ok = (isinstance(func, ast.Name) and func.id in DECORATOR_BUILTINS
                             or full in ("triton.cdiv", "triton.next_power_of_2") or full.startswith("math."))
            if not callee_ok:
                return node
            return next((p for p in (self.meta_expr_problem(a, param) for a in node.args) if p), None)
        return node

    def run(self) -> list[Violation]:
        self.check_module_level()
        self.jit_names = {n for n, f in self.functions.items() if self.is_jit(f)}
        self.check_functions()
        return self.violations


def is_constant_expr(node: ast.AST, checker: ModuleChecker, *, allow_lists: bool = False) -> bool:
    """Immutable module-level values: literals, tuples, arithmetic, dtypes, ``tl.constexpr(c)``."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple) or (allow_lists and isinstance(node, ast.List)):
        return all(is_constant_expr(e, checker, allow_lists=allow_lists) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return is_constant_expr(node.operand, checker)
    if isinstance(node, ast.BinOp):
        return is_constant_expr(node.left, checker) and is_constant_expr(node.right, checker)
    if isinstance(node, ast.Name):
        return node.id in checker.constants or node.id in checker.members
    if isinstance(node, ast.Attribute):
        root = dotted(node)
        return root is not None and root.split(".")[0] in checker.modules
    if isinstance(node, ast.Call):
        full = checker.resolve(node.func)
        return (full == "triton.language.constexpr" and all(is_constant_expr(a, checker) for a in node.args)
                and not node.keywords)
    return False


def _src(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _param_names(source: str) -> set[str]:
    try:
        return set(parse_param_space(source))
    except ParamSpaceError:
        return set(HINT_PARAMS)


def find_violations(source: str) -> list[Violation]:
    """All rule violations in *source* (which must parse; raises SyntaxError otherwise)."""
    if len(source.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
        return [Violation(0, "size", f"the source is over {MAX_SOURCE_BYTES // 1024} KB; kernels are far smaller.")]
    tree = safe_parse(source)
    try:
        checker = ModuleChecker(tree)
        violations = [Violation(*v) for v in text_violations(source, tree, checker.is_jit)]
        violations += checker.run()
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
