"""Turn an LLM reply into a new kernel source: SEARCH/REPLACE blocks or a full rewrite.

Replies are parsed robustly: blocks may sit inside or outside code fences, there may
be several, marker lines may carry extra ``<``/``=``/``>`` characters or trailing
text, and the SEARCH text may drift from the parent in whitespace.  Each SEARCH is
located by, in order: an exact substring match, a whitespace-normalised line match
(trailing spaces, then indentation; the replacement is re-indented to fit), and a
fuzzy line-window match above a similarity threshold.  Anything that does not apply
raises :class:`EditError` with a reason written for the log and the user.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass, field

from ..ast_safe import parse as safe_parse

#: Similarity a fuzzy SEARCH match must reach (difflib ratio over the line window).
FUZZY_THRESHOLD = 0.85

_SEARCH = re.compile(r"^\s*<{5,}\s*SEARCH\b.*$", re.IGNORECASE)
_DIVIDER = re.compile(r"^\s*={5,}\s*$")
_REPLACE = re.compile(r"^\s*>{5,}\s*REPLACE\b.*$", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+-]*)\s*$")


class EditError(ValueError):
    """The reply holds no usable edit, or an edit does not apply to the parent."""


@dataclass(frozen=True)
class EditBlock:
    """One SEARCH/REPLACE pair (texts without their marker lines)."""

    search: str
    replace: str


@dataclass
class EditOutcome:
    """A successfully edited source and how each block was matched."""

    source: str
    kind: str                                          # "diff" | "rewrite"
    matches: list[str] = field(default_factory=list)   # per block: "exact", "whitespace", "indent", "fuzzy 0.91", "append"


def parse_search_replace(text: str) -> list[EditBlock]:
    """All SEARCH/REPLACE blocks in *text*, in order.

    Raises :class:`EditError` for a block that opens but never closes (a truncated
    reply), so a half edit is never applied.
    """
    blocks: list[EditBlock] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not _SEARCH.match(lines[i]):
            i += 1
            continue
        start = i
        search: list[str] = []
        replace: list[str] = []
        i += 1
        while i < len(lines) and not _DIVIDER.match(lines[i]):
            if _SEARCH.match(lines[i]) or _REPLACE.match(lines[i]):
                raise EditError(f"SEARCH block {len(blocks) + 1} (reply line {start + 1}) has no "
                                f"'=======' divider before line {i + 1}")
            search.append(lines[i])
            i += 1
        if i >= len(lines):
            raise EditError(f"SEARCH block {len(blocks) + 1} (reply line {start + 1}) is not closed: "
                            "no '=======' divider (reply truncated?)")
        i += 1
        while i < len(lines) and not _REPLACE.match(lines[i]):
            if _SEARCH.match(lines[i]):
                raise EditError(f"SEARCH block {len(blocks) + 1} (reply line {start + 1}) has no "
                                f"'>>>>>>> REPLACE' before the next SEARCH at line {i + 1}")
            replace.append(lines[i])
            i += 1
        if i >= len(lines):
            raise EditError(f"SEARCH block {len(blocks) + 1} (reply line {start + 1}) is not closed: "
                            "no '>>>>>>> REPLACE' line (reply truncated?)")
        i += 1
        blocks.append(EditBlock(_strip_fence_lines(search), _strip_fence_lines(replace)))
    return blocks


def _strip_fence_lines(lines: list[str]) -> str:
    """Block text, dropping code-fence lines an LLM put just inside the markers."""
    if lines and _FENCE.match(lines[0]):
        lines = lines[1:]
    if lines and _FENCE.match(lines[-1]):
        lines = lines[:-1]
    return "\n".join(lines)


def extract_code_fences(text: str) -> list[str]:
    """Bodies of fenced code blocks (```python, ```py, ``` or ~~~), in order."""
    bodies: list[str] = []
    current: list[str] | None = None
    opener = ""
    for line in text.splitlines():
        m = _FENCE.match(line)
        if current is None:
            if m and m.group(2).lower() in ("", "python", "py", "python3"):
                current, opener = [], m.group(1)
        elif m and m.group(1) == opener and not m.group(2):
            bodies.append("\n".join(current))
            current = None
        else:
            current.append(line)
    if current is not None and current:
        bodies.append("\n".join(current))     # unterminated fence: take what is there
    return bodies


def extract_rewrite(text: str, parent_source: str | None = None) -> str:
    """The full kernel module from a reply: the last module-like fence that is not the parent
    (a reply may quote the current kernel before its new version), else the largest one.

    Raises :class:`EditError` when the reply has no such fence.
    """
    fences = [b for b in extract_code_fences(text) if not _SEARCH.search(b)]
    modules = [b for b in fences if "def launch" in b or "PARAMS" in b]
    if not modules:
        if fences:
            raise EditError("the reply's code fence is not a full kernel module (no PARAMS and no def launch)")
        raise EditError("the reply holds no ```python code fence with the rewritten kernel")
    new = [b for b in modules if "def launch" in b and parent_source is not None
           and b.strip() != parent_source.strip()]
    module = new[-1] if new else max(modules, key=len)
    if "def launch" not in module:
        raise EditError("the rewritten module has no `def launch` (was the reply cut off by max_tokens?)")
    return module.strip("\n") + "\n"


def apply_blocks(source: str, blocks: list[EditBlock], *,
                 fuzzy_threshold: float = FUZZY_THRESHOLD) -> EditOutcome:
    """Apply *blocks* to *source* one after another; raise :class:`EditError` if any fails."""
    if not blocks:
        raise EditError("no SEARCH/REPLACE blocks to apply")
    matches: list[str] = []
    for n, block in enumerate(blocks, 1):
        try:
            source, how = _apply_one(source, block, fuzzy_threshold)
        except EditError as exc:
            raise EditError(f"SEARCH/REPLACE block {n} of {len(blocks)}: {exc}") from None
        matches.append(how)
    return EditOutcome(source=source, kind="diff", matches=matches)


def _apply_one(source: str, block: EditBlock, threshold: float) -> tuple[str, str]:
    search = block.search.strip("\n")
    replace = block.replace.strip("\n")
    if not search.strip():
        if not replace.strip():
            raise EditError("both SEARCH and REPLACE are empty")
        return source.rstrip("\n") + "\n\n" + replace + "\n", "append"
    count = source.count(search)
    if count > 1:
        raise EditError(f"SEARCH matches {count} places; add lines of context so it matches one")
    if count == 1 and _on_line_boundaries(source, search):
        return source.replace(search, replace, 1), "exact"

    src_lines = source.splitlines()
    s_lines = search.splitlines()
    r_lines = replace.splitlines()
    span = _find_lines(src_lines, s_lines, lambda s: s.rstrip())
    how = "whitespace"
    if span is None:
        span = _find_lines(src_lines, s_lines, lambda s: s.strip())
        how = "indent"
    if span is None:
        span, ratio, best = _find_fuzzy(src_lines, s_lines, threshold)
        if span is None:
            where = f" (best: {best[1]:.2f} at lines {best[0] + 1}-{best[0] + len(s_lines)})" if best else ""
            first = s_lines[0].strip()[:60]
            raise EditError(f"SEARCH text starting {first!r} not found in the parent "
                            f"(exact, whitespace-normalised and fuzzy match >= {threshold:.2f} all failed{where})")
        how = f"fuzzy {ratio:.2f}"
    lo, hi = span
    if how != "whitespace":
        r_lines = _reindent(r_lines, s_lines, src_lines[lo:hi])
    new_lines = src_lines[:lo] + r_lines + src_lines[hi:]
    tail = "\n" if source.endswith("\n") else ""
    return "\n".join(new_lines) + tail, how


def _find_lines(src: list[str], pattern: list[str], norm) -> tuple[int, int] | None:
    """The window of *src* equal to *pattern* line by line under *norm*; EditError if several are."""
    want = [norm(s) for s in pattern]
    n = len(want)
    have = [norm(s) for s in src]
    found = [lo for lo in range(len(src) - n + 1) if have[lo:lo + n] == want]
    if len(found) > 1:
        raise EditError(f"SEARCH matches {len(found)} places (lines {', '.join(str(lo + 1) for lo in found[:5])}); "
                        "add lines of context so it matches one")
    return (found[0], found[0] + n) if found else None


#: Windows (by the cheap upper bound) whose full similarity a fuzzy SEARCH computes.
FUZZY_CANDIDATES = 6
#: Longer SEARCH texts are compared line by line (character-level similarity is quadratic).
FUZZY_CHAR_LIMIT = 2000


def _find_fuzzy(src: list[str], pattern: list[str], threshold: float):
    """Best window (lengths n-1..n+1) by difflib ratio on stripped lines; None if below threshold."""
    want = "\n".join(s.strip() for s in pattern)
    n = len(pattern)
    stripped = [s.strip() for s in src]
    best: tuple[int, float, int] | None = None        # (lo, ratio, length)
    # The full ratio is quadratic in the text: computed only for the windows the cheap
    # bounds rank highest (two similar kernels once took 160 s of CPU here).
    shortlist: list[tuple[float, int, int, difflib.SequenceMatcher]] = []
    for length in sorted({max(1, n - 1), n, n + 1}):
        for lo in range(len(src) - length + 1):
            have = "\n".join(stripped[lo:lo + length])
            matcher = difflib.SequenceMatcher(None, want, have, autojunk=False)
            if matcher.real_quick_ratio() < threshold:
                continue
            quick = matcher.quick_ratio()
            if quick >= threshold:
                shortlist.append((quick, lo, length, matcher))
    for _, lo, length, matcher in sorted(shortlist, key=lambda c: -c[0])[:FUZZY_CANDIDATES]:
        if len(want) <= FUZZY_CHAR_LIMIT:
            ratio = matcher.ratio()
        else:                                          # long blocks: whole lines as the units
            ratio = difflib.SequenceMatcher(None, want.split("\n"), stripped[lo:lo + length],
                                            autojunk=False).ratio()
        if best is None or ratio > best[1]:
            best = (lo, ratio, length)
    if best is None:
        return None, 0.0, _fuzzy_best_effort(src, pattern)
    lo, ratio, length = best
    if ratio < threshold:
        return None, ratio, (lo, ratio)
    return (lo, lo + length), ratio, (lo, ratio)


def _fuzzy_best_effort(src: list[str], pattern: list[str]) -> tuple[int, float] | None:
    """The closest window's ratio, for the error message only.

    Compared line by line (whole stripped lines as the units), not character by character:
    a 150-line SEARCH against a 190-line parent took 26 s of CPU the other way.
    """
    want = [s.strip() for s in pattern]
    stripped = [s.strip() for s in src]
    n = len(pattern)
    best = None
    for lo in range(max(1, len(src) - n + 1)):
        ratio = difflib.SequenceMatcher(None, want, stripped[lo:lo + n], autojunk=False).ratio()
        if best is None or ratio > best[1]:
            best = (lo, ratio)
    return best


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(replace: list[str], search: list[str], matched: list[str]) -> list[str]:
    """Shift *replace* by the indentation difference between *search* and the matched lines."""
    s_first = next((l for l in search if l.strip()), "")
    m_first = next((l for l in matched if l.strip()), "")
    have, want = _indent_of(s_first), _indent_of(m_first)
    if have == want:
        return replace
    out = []
    for line in replace:
        if not line.strip():
            out.append(line)
        elif line.startswith(have):
            out.append(want + line[len(have):])
        else:
            out.append(want + line.lstrip())
    return out


def apply_reply(parent_source: str, reply: str, *, prefer: str = "diff",
                fuzzy_threshold: float = FUZZY_THRESHOLD) -> EditOutcome:
    """The new source an LLM *reply* describes, relative to *parent_source*.

    *prefer* is what the prompt asked for ("diff" or "rewrite"); the other form is
    accepted too when the preferred one is absent.  The result must parse as Python
    and differ from the parent; otherwise :class:`EditError` says why.
    """
    if not reply or not reply.strip():
        raise EditError("the reply is empty")
    blocks = parse_search_replace(reply)
    if prefer == "rewrite":
        try:
            outcome = EditOutcome(source=extract_rewrite(reply, parent_source), kind="rewrite")
        except EditError:
            if not blocks:
                raise
            outcome = apply_blocks(parent_source, blocks, fuzzy_threshold=fuzzy_threshold)
    elif blocks:
        outcome = apply_blocks(parent_source, blocks, fuzzy_threshold=fuzzy_threshold)
    else:
        try:
            outcome = EditOutcome(source=extract_rewrite(reply, parent_source), kind="rewrite")
        except EditError:
            raise EditError("the reply holds no SEARCH/REPLACE block and no ```python fence with a "
                            "full kernel module") from None
    check_source(outcome.source, parent_source)
    return outcome


def _on_line_boundaries(source: str, search: str) -> bool:
    """Whether *search* (found once) starts and ends a line: `a = 1` must not edit `a = 10`."""
    at = source.index(search)
    end = at + len(search)
    return (at == 0 or source[at - 1] == "\n") and (end == len(source) or source[end] == "\n")


def check_source(source: str, parent_source: str) -> None:
    """Reject a result that does not parse or equals the parent (never runs the code)."""
    if source.strip() == parent_source.strip():
        raise EditError("the edit leaves the kernel unchanged")
    try:
        safe_parse(source)
    except SyntaxError as exc:
        line = (exc.text or "").strip()[:80]
        raise EditError(f"the edited kernel does not parse: line {exc.lineno}: {exc.msg} ({line!r})") from None
    except (ValueError, RecursionError, MemoryError, UnicodeError) as exc:   # e.g. 3,000 chained `+ 1`
        raise EditError(f"the edited kernel cannot be parsed: {type(exc).__name__}: {str(exc)[:120]}") from None


def reply_description(reply: str, *, limit: int = 240) -> str:
    """The reply's prose (outside code fences and edit blocks), shortened for the candidate log."""
    prose: list[str] = []
    in_fence = in_block = False
    for line in reply.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if _SEARCH.match(line):
            in_block = True
            continue
        if _REPLACE.match(line):
            in_block = False
            continue
        if not in_fence and not in_block and line.strip():
            prose.append(re.sub(r"\*\*|__|`", "", line).strip().lstrip("#*- ").strip())
    text = " ".join(p for p in prose if p)
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."
