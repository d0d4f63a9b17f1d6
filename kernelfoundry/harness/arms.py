"""Branch-arm coverage: which arms of the candidate's branches a run took (in the child).

A kernel can be exact at every shape the checks compare and take another path at the
target shape (``if M >= 1024: k_blocks = k_blocks * 5 // 8``, in the kernel or in
``launch``).  Every branch of the candidate is instrumented with a call that records
its arm: both arms of ``if`` (an ``if`` without ``else`` gets one that only records),
both arms of a conditional expression, every short-circuited operand of ``and`` /
``or``, and the body of every ``for`` / ``while`` loop.  The check runs and the trace
report the arms they took; the judge (:func:`correctness.unchecked_paths`) fails a
config the model picked whose traced run at a target shape took an arm no
correctness run of that config took.

Kernels are instrumented where the interpreter compiles them (:mod:`loop_hooks`),
host code (``launch``, helpers, heuristics) when the module is imported
(:func:`compile_host`); the recorder ``_kf_arm`` lives under the reserved ``_kf``
prefix, which candidate source cannot name.  Arms are ``"kernel:line:column:kind"``
strings with file line numbers.
"""

from __future__ import annotations

import ast
from typing import Any

ARM_HELPER = "_kf_arm"


class ArmRecorder:
    """The arms taken since the last :meth:`take`; recording pauses inside :meth:`paused`."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.active = True

    def hit(self, arm: str) -> None:
        if self.active:
            self.taken.add(arm)

    def take(self) -> list[str]:
        out = sorted(self.taken)
        self.taken = set()
        return out


RECORDER = ArmRecorder()


def _kf_arm(arm: str) -> None:
    RECORDER.hit(arm)


class ArmTransformer(ast.NodeTransformer):
    """Insert ``_kf_arm("<where>:<line>:<col>:<kind>")`` at every branch arm (line numbers kept)."""

    def __init__(self, where: str):
        self.where = where

    def _mark(self, node: ast.AST, kind: str) -> ast.Call:
        arm = f"{self.where}:{getattr(node, 'lineno', 0)}:{getattr(node, 'col_offset', 0)}:{kind}"
        call = ast.Call(func=ast.Name(id=ARM_HELPER, ctx=ast.Load()), args=[ast.Constant(value=arm)], keywords=[])
        return ast.copy_location(call, node)

    def _stmt(self, node: ast.AST, kind: str) -> ast.Expr:
        return ast.copy_location(ast.Expr(self._mark(node, kind)), node)

    def _tagged(self, node: ast.AST, value: ast.expr, kind: str) -> ast.expr:
        """``(_kf_arm(...), value)[1]``: records, then evaluates to *value*."""
        pair = ast.copy_location(ast.Tuple(elts=[self._mark(node, kind), value], ctx=ast.Load()), value)
        return ast.copy_location(ast.Subscript(value=pair, slice=ast.Constant(value=1), ctx=ast.Load()), value)

    def visit_If(self, node: ast.If):
        self.generic_visit(node)
        node.body.insert(0, self._stmt(node, "then"))
        node.orelse.insert(0, self._stmt(node, "else"))
        return node

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        node.body = self._tagged(node, node.body, "then")
        node.orelse = self._tagged(node, node.orelse, "else")
        return node

    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        node.values = [node.values[0]] + [self._tagged(v, v, f"operand{i}")
                                          for i, v in enumerate(node.values[1:], start=1)]
        return node

    def _loop(self, node):
        self.generic_visit(node)
        node.body.insert(0, self._stmt(node, "body"))
        return node

    visit_For = visit_While = _loop


def _is_jit(node: ast.AST) -> bool:
    """A function whose decorators mention ``jit`` (a Triton kernel: the interpreter instruments it)."""
    for dec in getattr(node, "decorator_list", []):
        target = dec.func if isinstance(dec, ast.Call) else dec
        if (isinstance(target, ast.Attribute) and target.attr == "jit") or (
                isinstance(target, ast.Name) and target.id == "jit"):
            return True
    return False


class _HostTransformer(ArmTransformer):
    def visit_FunctionDef(self, node: ast.FunctionDef):
        if _is_jit(node):                    # only its decorators (heuristics lambdas) are host code
            node.decorator_list = [self.visit(d) for d in node.decorator_list]
            return node
        return self.generic_visit(node)


def compile_host(source: str, filename: str) -> Any:
    """The module's code object with every host branch instrumented (kernels left to the interpreter)."""
    tree = _HostTransformer("host").visit(ast.parse(source, filename=filename))
    ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec")


def instrument_kernel(tree: ast.AST, kernel: str) -> ast.AST:
    """Instrument a kernel's rewritten AST (called by :mod:`loop_hooks` before it adds the loop helpers)."""
    return ArmTransformer(kernel).visit(tree)
