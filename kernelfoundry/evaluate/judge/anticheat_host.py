"""Host-code rules of the hack gate: ``launch`` and its helpers may not compute.

``launch`` may allocate, read shapes and strides, make views and launch
kernels; every value it returns must come out of a kernel.  Statically we do
not know types, so a small flow-insensitive inference marks which names hold
tensors: ``launch``'s positional inputs, allocations, views of tensors, and
(by a fixed point over call sites) the parameters and results of helpers that
receive or return them.  Then any arithmetic, comparison, truth test, item
write, non-metadata method, or call into non-kernel code with a tensor
argument is refused, with the line and a reason for the LLM.
"""

from __future__ import annotations

import ast
from typing import Protocol

from .anticheat_base import Violation, dotted
from ..contract.language import (TENSOR_METADATA_ATTRS, TENSOR_METADATA_METHODS, TENSOR_SAFE_BUILTINS,
                          TENSOR_VIEW_ATTRS, TENSOR_VIEW_METHODS, TENSOR_WRAPPERS, TORCH_ALLOCATORS)

_NO_COMPUTE = ("launch may only allocate, read shapes/strides, make views and launch kernels; "
               "compute everything inside a @triton.jit kernel")


class ModuleFacts(Protocol):
    """What the host rules read of the module's checker (:class:`.anticheat.ModuleChecker`, run first)."""

    functions: dict[str, ast.FunctionDef]     # module-level function name -> its definition
    jit_names: set[str]                       # the names of the @triton.jit kernels
    members: dict[str, str]                   # local name -> "module.member" (from-imports)
    modules: dict[str, str]                   # local name -> module path it is bound to


class HostChecker:
    """Type-infers tensors in host functions and reports torch computation."""

    def __init__(self, module: ModuleFacts, param_names: set[str]):
        self.module = module
        self.host = {n: f for n, f in module.functions.items() if n not in module.jit_names}
        self.tensor_params: dict[str, set[str]] = {n: set() for n in self.host}
        self.returns_tensor: dict[str, bool] = {n: False for n in self.host}
        self.violations: list[Violation] = []
        launch = self.host.get("launch")
        if launch is not None:
            args = launch.args
            positional = [a.arg for a in [*args.posonlyargs, *args.args] if a.arg not in param_names]
            self.tensor_params["launch"] = set(positional) | ({args.vararg.arg} if args.vararg else set())

    # ---- typing --------------------------------------------------------------------------
    def full_name(self, func: ast.AST) -> str | None:
        """The module path *func* refers to (``empty`` -> ``torch.empty``), or None."""
        name = dotted(func)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        if root in self.module.members:
            return self.module.members[root] + (f".{rest}" if rest else "")
        if root in self.module.modules:
            return self.module.modules[root] + (f".{rest}" if rest else "")
        return None

    def allocator(self, func: ast.AST) -> bool:
        full = self.full_name(func)
        return full is not None and full.startswith("torch.") and full.split(".", 1)[1] in TORCH_ALLOCATORS

    def is_tensor(self, node: ast.AST | None, tensors: set[str]) -> bool:
        if node is None:
            return False
        if isinstance(node, ast.Name):
            return node.id in tensors
        if isinstance(node, ast.Attribute):
            return node.attr not in TENSOR_METADATA_ATTRS and self.is_tensor(node.value, tensors)
        if isinstance(node, ast.Subscript):
            return self.is_tensor(node.value, tensors)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and self.is_tensor(func.value, tensors):
                return func.attr not in TENSOR_METADATA_METHODS
            if self.allocator(func):
                return True
            if isinstance(func, ast.Name) and func.id in self.host:
                return self.returns_tensor[func.id]
            if isinstance(func, ast.Name) and func.id in tensors:          # a local lambda/def returning one
                return True
            if isinstance(func, ast.Lambda):
                return self.is_tensor(func.body, tensors)
            if isinstance(func, ast.Name) and func.id in ("list", "tuple"):   # containers of tensors
                return any(self.is_tensor(a, tensors) for a in node.args)
            return False
        if isinstance(node, (ast.Starred, ast.NamedExpr)):
            return self.is_tensor(node.value, tensors)
        if isinstance(node, ast.IfExp):
            return self.is_tensor(node.body, tensors) or self.is_tensor(node.orelse, tensors)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self.is_tensor(e, tensors) for e in node.elts)
        if isinstance(node, ast.Dict):                                   # {'a': x}['a'], .get, .values()
            return any(self.is_tensor(v, tensors) for v in node.values)
        if isinstance(node, ast.DictComp):
            return self.is_tensor(node.value, tensors)
        if isinstance(node, ast.Lambda):                                 # `f = lambda: x`, then f().exp()
            return self.is_tensor(node.body, tensors)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self.is_tensor(node.elt, tensors)
        if isinstance(node, ast.BinOp):
            return self.is_tensor(node.left, tensors) or self.is_tensor(node.right, tensors)
        if isinstance(node, ast.UnaryOp):
            return self.is_tensor(node.operand, tensors)
        return False

    def local_tensors(self, fn: ast.FunctionDef) -> set[str]:
        """Names in *fn* (and its nested scopes) that may hold tensors."""
        tensors = set(self.tensor_params[fn.name])
        while True:                                # flow-insensitive; monotone, so this terminates
            before = len(tensors)
            for node in ast.walk(fn):
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                    value = node.value
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if self.is_tensor(value, tensors) and not _is_metadata(value):
                        for t in targets:
                            tensors |= _names_in(t)
                elif isinstance(node, (ast.For, ast.comprehension)):
                    if self.is_tensor(node.iter, tensors):
                        tensors |= _names_in(node.target)
                elif isinstance(node, ast.FunctionDef) and node is not fn:  # a nested def returning a tensor
                    if any(isinstance(r, ast.Return) and self.is_tensor(r.value, tensors) for r in ast.walk(node)):
                        tensors.add(node.name)
            if len(tensors) == before:
                break
        return tensors

    def propagate(self) -> bool:
        """One round of call-site propagation into helpers; True if anything changed."""
        changed = False
        for name, fn in self.host.items():
            tensors = self.local_tensors(fn)
            returns = any(isinstance(n, ast.Return) and self.is_tensor(n.value, tensors) for n in ast.walk(fn))
            if returns and not self.returns_tensor[name]:
                self.returns_tensor[name] = changed = True
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                callee = call.func.id if isinstance(call.func, ast.Name) else None
                if callee not in self.host:
                    continue
                params = self.host[callee].args
                positional = [a.arg for a in [*params.posonlyargs, *params.args]]
                for i, arg in enumerate(call.args):
                    if self.is_tensor(arg, tensors):
                        target = positional[i] if i < len(positional) and not isinstance(arg, ast.Starred) else (
                            params.vararg.arg if params.vararg else None)
                        if isinstance(arg, ast.Starred):
                            new = set(positional) | ({params.vararg.arg} if params.vararg else set())
                        else:
                            new = {target} if target else set()
                        if not new <= self.tensor_params[callee]:
                            self.tensor_params[callee] |= new
                            changed = True
                for kw in call.keywords:
                    if kw.arg and self.is_tensor(kw.value, tensors) and kw.arg not in self.tensor_params[callee]:
                        self.tensor_params[callee].add(kw.arg)
                        changed = True
        return changed

    # ---- rules ---------------------------------------------------------------------------
    def add(self, node: ast.AST, message: str) -> None:
        self.violations.append(Violation(getattr(node, "lineno", 0), "host-compute", message))

    def callee_allows_tensors(self, func: ast.AST, tensors: set[str]) -> bool:
        if isinstance(func, ast.Subscript):              # kernel[grid](...)
            return isinstance(func.value, ast.Name) and func.value.id in self.module.jit_names
        if isinstance(func, ast.Name):
            return (func.id in self.host or func.id in TENSOR_SAFE_BUILTINS or self.allocator(func)
                    or self.full_name(func) in TENSOR_WRAPPERS)
        if isinstance(func, ast.Attribute):
            if self.is_tensor(func.value, tensors):
                return func.attr in TENSOR_VIEW_METHODS | TENSOR_METADATA_METHODS
            return self.allocator(func) or self.full_name(func) in TENSOR_WRAPPERS | {
                "torch.is_tensor", "torch.is_floating_point"}
        return False

    def check_function(self, fn: ast.FunctionDef) -> None:
        tensors = self.local_tensors(fn)
        calls_funcs = {id(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
        where = f"in `{fn.name}`"
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and self.is_tensor(func.value, tensors):
                    if func.attr not in TENSOR_VIEW_METHODS | TENSOR_METADATA_METHODS:
                        self.add(node, f"`{_src(func)}()` {where} computes with torch; {_NO_COMPUTE}.")
                        continue
                args = [*node.args, *(k.value for k in node.keywords)]
                bad = next((a for a in args if self.is_tensor(a, tensors)), None)
                if bad is not None and not self.callee_allows_tensors(func, tensors):
                    self.add(node, f"`{_src(func)}(...)` {where} receives tensor `{_src(bad)}`; {_NO_COMPUTE}.")
            elif isinstance(node, ast.Attribute) and id(node) not in calls_funcs:
                if (self.is_tensor(node.value, tensors) and node.attr not in TENSOR_METADATA_ATTRS | TENSOR_VIEW_ATTRS
                        and isinstance(node.ctx, ast.Load)):
                    self.add(node, f"`{_src(node)}` {where}: only shape, dtype, device and ndim may be read "
                                   "from tensors in host code.")
            elif isinstance(node, ast.BinOp) and (self.is_tensor(node.left, tensors) or self.is_tensor(node.right, tensors)):
                self.add(node, f"`{_src(node)}` {where} is tensor arithmetic; {_NO_COMPUTE}.")
            elif isinstance(node, ast.UnaryOp) and self.is_tensor(node.operand, tensors):
                self.add(node, f"`{_src(node)}` {where} computes on a tensor; {_NO_COMPUTE}.")
            elif isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(self.is_tensor(o, tensors) for o in operands) and not all(
                        isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                    self.add(node, f"`{_src(node)}` {where} compares tensors; {_NO_COMPUTE}.")
            elif isinstance(node, ast.AugAssign) and (self.is_tensor(node.target, tensors) or self.is_tensor(node.value, tensors)):
                self.add(node, f"`{_src(node).strip()}` {where} updates a tensor; {_NO_COMPUTE}.")
            elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) and self.is_tensor(node.test, tensors):
                self.add(node, f"testing the truth of tensor `{_src(node.test)}` {where} reads its values; {_NO_COMPUTE}.")
            elif isinstance(node, ast.BoolOp) and any(self.is_tensor(v, tensors) for v in node.values):
                self.add(node, f"`{_src(node)}` {where} tests tensor values; {_NO_COMPUTE}.")
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
                if self.is_tensor(node.value, tensors) or not _is_local_container(node.value, fn):
                    self.add(node, f"item assignment `{_src(node)} = ...` {where} writes with torch or into "
                                   f"shared state; {_NO_COMPUTE}.")

    def run(self) -> list[Violation]:
        while self.propagate():                    # monotone: each round adds a tensor parameter or result
            pass
        for fn in self.host.values():
            self.check_function(fn)
        return self.violations


def _names_in(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _is_metadata(value: ast.AST) -> bool:
    """``x.shape``, ``x.stride()``... (unpacking them gives ints, not tensors)."""
    if isinstance(value, ast.Attribute):
        return value.attr in TENSOR_METADATA_ATTRS
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        return value.func.attr in TENSOR_METADATA_METHODS
    return False


def _is_local_container(base: ast.AST, fn: ast.FunctionDef) -> bool:
    """Is *base* a name bound in *fn* to a list/dict/set display or comprehension?"""
    if not isinstance(base, ast.Name):
        return False
    literal = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, literal):
            if any(isinstance(t, ast.Name) and t.id == base.id for t in node.targets):
                return True
    return False


def _src(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."
