"""Static rules on the source text: the text every reader sees must be the tree the checks read.

The other rules read Python's syntax tree of the source string.  Triton does not: the
interpreter and the GPU compiler re-read each kernel's text from the written file
(``inspect``, ``linecache``), and pick its ``def`` line by a text rule (the interpreter's
rewriter takes the last line starting with ``def``, the JIT the first).  A red-team round
(2026-11-25) ran code no rule had read through three gaps between the two readings:

* a coding declaration (``# coding: utf-7`` / ``unicode_escape``): the string the checks
  parse and the file Triton decodes are different texts (a comment decodes to code);
* a second ``def`` line inside a kernel (in its docstring): the interpreter ran the
  hidden body, the GPU compiler the real one;
* line separators Python does not break lines at but other readers do (form feed,
  ``\\x1c``-``\\x1e``, NEL, U+2028/9) or a lone carriage return.

So: no coding declaration but UTF-8, lines broken by ``\\n`` (or ``\\r\\n``) only, and one
``def`` line per kernel.
"""

from __future__ import annotations

import ast
import re

#: PEP 263's declaration, in the first two lines.
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_UTF8 = {"utf-8", "utf8", "utf_8", "utf-8-sig", "utf_8_sig"}
#: Characters some reader of the file takes as a line break and Python's tokenizer does not.
_ODD_BREAKS = {"\x0b": "vertical tab", "\x0c": "form feed", "\x1c": "\\x1c", "\x1d": "\\x1d", "\x1e": "\\x1e",
               "\x85": "next line (U+0085)", "\u2028": "line separator (U+2028)",
               "\u2029": "paragraph separator (U+2029)"}
_DEF_LINE = re.compile(r"\s*def\b")


def text_violations(source: str, tree: ast.Module, is_jit) -> list[tuple[int, str, str]]:
    """(line, rule, message) for every text rule *source* breaks; *is_jit* tells kernels apart."""
    out = []
    lines = source.split("\n")
    for i, line in enumerate(lines[:2], start=1):
        m = _CODING.match(line)
        if m and m.group(1).lower() not in _UTF8:
            out.append((i, "encoding", f"the coding declaration `{m.group(1)}` is not allowed; sources are UTF-8 "
                                       "(Triton re-reads kernels from the file, decoded by that declaration)"))
    for char, name in _ODD_BREAKS.items():
        if char in source:
            line = source[:source.index(char)].count("\n") + 1
            out.append((line, "line-break", f"the source holds a {name}; break lines with newlines only"))
    lone_cr = re.search(r"\r(?!\n)", source)
    if lone_cr:
        out.append((source[:lone_cr.start()].count("\n") + 1, "line-break",
                    "the source holds a carriage return that does not end a line; break lines with newlines only"))
    starts = [min([d.lineno for d in getattr(s, "decorator_list", [])] + [s.lineno]) for s in tree.body]
    for i, fn in enumerate(tree.body):
        if isinstance(fn, ast.FunctionDef) and is_jit(fn):
            # up to the next statement: what inspect may hand Triton as the kernel's text
            last = starts[i + 1] - 1 if i + 1 < len(starts) else len(lines)
            defs = [n for n in range(starts[i], last + 1) if _DEF_LINE.match(lines[n - 1])]
            for n in defs:
                if n != fn.lineno:
                    out.append((n, "def-line", f"kernel `{fn.name}` has a second line starting with `def` (in a "
                                               "string or comment); Triton finds a kernel's code by its def line"))
    return out
