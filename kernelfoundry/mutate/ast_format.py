"""Readable output for re-generated statements: ``ast.unparse`` writes each
statement on one line, so long lines are wrapped at the commas of their first
bracket (implicit continuation, aligned under the bracket).  The wrapped text is
kept only when it parses to the same AST."""

from __future__ import annotations

import ast
import io
import re
import tokenize

from ..ast_safe import parse as safe_parse

WIDTH = 100


def _wrap_line(line: str, width: int) -> str:
    """*line* split at the top-level commas of its outermost first bracket, or unchanged."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return line
    depth, open_col, commas = 0, None, []
    previous = None
    for tok in tokens:
        if tok.type != tokenize.OP:
            previous = tok
            continue
        if tok.string in ")]}" and previous is not None and previous.string == "," and depth == 1 \
                and commas and commas[-1] == previous.start[1]:
            commas.pop()                  # a trailing comma, as in (x,)
        previous = tok
        if tok.string in "([{":
            if depth == 0 and open_col is None:
                open_col = tok.start[1]
            depth += 1
        elif tok.string in ")]}":
            depth -= 1
            if depth == 0 and open_col is not None:
                if commas:
                    break
                open_col = None           # a bracket without commas (e.g. kernel[grid]): next one
        elif tok.string == "," and depth == 1 and open_col is not None:
            commas.append(tok.start[1])
    if open_col is None or not commas:
        return line
    cuts = [0] + [c + 1 for c in commas] + [len(line)]
    pieces = [line[a:b] for a, b in zip(cuts, cuts[1:])]
    out: list[str] = []
    if open_col + 1 <= width // 2:      # align continuation lines under the bracket
        indent = " " * (open_col + 1)
    else:                                # hanging indent: break right after the bracket
        indent = " " * (len(line) - len(line.lstrip()) + 8)
        out.append(line[:open_col + 1])
        pieces[0] = indent + pieces[0][open_col + 1:].lstrip()
    current = pieces[0]
    for piece in pieces[1:]:
        if len(current) + len(piece) > width:
            out.append(current.rstrip())
            current = indent + piece.lstrip()
        else:
            current += piece
    out.append(current)
    return "\n".join(out)


_ONE_TUPLE_INDEX = re.compile(r"\[([A-Za-z_][\w.]*(?:\([^()\[\]]*\))?),\]")


def tidy(text: str) -> str:
    """``kernel[n,](...)`` (as ``ast.unparse`` writes a 1-tuple grid) -> ``kernel[(n,)](...)``."""
    tidied = _ONE_TUPLE_INDEX.sub(r"[(\1,)]", text)
    try:
        return tidied if ast.dump(safe_parse(tidied)) == ast.dump(safe_parse(text)) else text
    except SyntaxError:
        return text


def wrap_long_lines(text: str, width: int = WIDTH) -> str:
    """Wrap lines of *text* (a statement's source) longer than *width*; same AST or unchanged."""
    lines = text.split("\n")
    if all(len(line) <= width for line in lines):
        return text
    wrapped = "\n".join(_wrap_line(line, width) if len(line) > width else line for line in lines)
    try:
        if ast.dump(safe_parse(wrapped)) == ast.dump(safe_parse(text)):
            return wrapped
    except SyntaxError:
        pass
    return text
