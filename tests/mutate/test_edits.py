"""SEARCH/REPLACE and full-rewrite parsing (kernelfoundry.mutate.edits)."""

import pytest

from kernelfoundry.mutate.edits import (EditError, apply_blocks, apply_reply, extract_rewrite,
                                        parse_search_replace, reply_description)

PARENT = '''import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [64, 128], "num_warps": [4]}


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def launch(x, y, *, BLOCK, num_warps):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, out, x.numel(), BLOCK=BLOCK, num_warps=num_warps)
    return out
'''


def block(search, replace, fence=False):
    text = f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE"
    return f"```python\n{text}\n```" if fence else text


def test_exact_block_applies():
    reply = "Bigger blocks.\n" + block('PARAMS = {"BLOCK": [64, 128], "num_warps": [4]}',
                                       'PARAMS = {"BLOCK": [256, 1024], "num_warps": [4, 8]}')
    out = apply_reply(PARENT, reply)
    assert out.kind == "diff" and out.matches == ["exact"]
    assert '"BLOCK": [256, 1024]' in out.source and '"BLOCK": [64, 128]' not in out.source
    assert out.source.count("def launch") == 1


def test_several_blocks_fenced_and_not():
    reply = ("Two changes.\n" + block("    mask = offs < n", "    mask = offs < n  # bounds", fence=True)
             + "\nand\n" + block("    return out", "    return out.view_as(x)"))
    blocks = parse_search_replace(reply)
    assert [b.search for b in blocks] == ["    mask = offs < n", "    return out"]
    out = apply_reply(PARENT, reply)
    assert "# bounds" in out.source and "out.view_as(x)" in out.source
    assert out.matches == ["exact", "exact"]


def test_marker_variants_are_accepted():
    reply = ("<<<<<<<<< search\n    pid = tl.program_id(0)\n=========\n    pid = tl.program_id(axis=0)\n"
             ">>>>>>> REPLACE (done)\n")
    out = apply_reply(PARENT, reply)
    assert "tl.program_id(axis=0)" in out.source


def test_trailing_whitespace_drift():
    reply = block("    x = tl.load(x_ptr + offs, mask=mask)   \n    y = tl.load(y_ptr + offs, mask=mask)  ",
                  "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n    y = tl.load(y_ptr + offs, mask=mask, other=0.0)")
    out = apply_reply(PARENT, reply)
    assert out.matches == ["whitespace"]
    assert "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n    y = tl.load(y_ptr" in out.source


def test_indentation_drift_reindents_replacement():
    # the LLM dropped the function-body indentation in both SEARCH and REPLACE
    reply = block("x = tl.load(x_ptr + offs, mask=mask)\ny = tl.load(y_ptr + offs, mask=mask)",
                  "x = tl.load(x_ptr + offs, mask=mask, other=0.0)\nif True:\n    y = tl.load(y_ptr + offs, mask=mask)")
    out = apply_reply(PARENT, reply)
    assert out.matches == ["indent"]
    assert "\n    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n    if True:\n        y = tl.load(" in out.source


def test_fuzzy_match_tolerates_a_small_difference():
    reply = block("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n    mask = offs <  n\n    x = tl.load(x_ptr + offs, mask = mask)",
                  "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < n\n    x = tl.load(x_ptr + offs, mask=mask, other=0.0)")
    out = apply_reply(PARENT, reply)
    assert out.matches[0].startswith("fuzzy")
    assert float(out.matches[0].split()[1]) >= 0.85
    assert "mask=mask, other=0.0)\n    y = tl.load" in out.source


def test_unmatched_search_gives_reason():
    reply = block("    z = tl.sqrt(q)\n    w = z * z", "    pass")
    with pytest.raises(EditError, match=r"block 1 of 1: SEARCH text starting 'z = tl.sqrt\(q\)' not found"):
        apply_reply(PARENT, reply)


def test_second_block_failing_names_it_and_nothing_applies():
    blocks = parse_search_replace(block("    return out", "    return out") + "\n"
                                  + block("    nothing_like_this()", "x"))
    with pytest.raises(EditError, match="block 2 of 2"):
        apply_blocks(PARENT, blocks)


def test_truncated_block_is_rejected():
    with pytest.raises(EditError, match="not closed"):
        parse_search_replace("<<<<<<< SEARCH\n    return out\n=======\n    return out.clone(")
    with pytest.raises(EditError, match="no '=======' divider"):
        parse_search_replace("<<<<<<< SEARCH\n    return out\n>>>>>>> REPLACE\n")


def test_empty_search_appends():
    reply = block("", "def helper():\n    return 1")
    out = apply_reply(PARENT, reply)
    assert out.matches == ["append"] and out.source.rstrip().endswith("return 1")


def test_full_rewrite_from_python_fence():
    new = PARENT.replace("[64, 128]", "[1024]")
    reply = f"Here is the kernel.\n```python\n{new}```\nDone."
    assert extract_rewrite(reply).strip() == new.strip()
    out = apply_reply(PARENT, reply, prefer="rewrite")
    assert out.kind == "rewrite" and '"BLOCK": [1024]' in out.source
    # a diff prompt answered with a full module is accepted too
    assert apply_reply(PARENT, reply, prefer="diff").kind == "rewrite"


def test_rewrite_prompt_answered_with_blocks():
    reply = block('PARAMS = {"BLOCK": [64, 128], "num_warps": [4]}', 'PARAMS = {"BLOCK": [512], "num_warps": [4]}')
    out = apply_reply(PARENT, reply, prefer="rewrite")
    assert out.kind == "diff" and '"BLOCK": [512]' in out.source


@pytest.mark.parametrize("reply, reason", [
    ("", "empty"),
    ("I would use bigger blocks, but I am not sure.", "no SEARCH/REPLACE block and no ```python fence"),
    ("```python\nx = 1\n```", "no SEARCH/REPLACE block and no ```python fence"),
])
def test_malformed_replies(reply, reason):
    with pytest.raises(EditError, match=reason.replace("(", r"\(")):
        apply_reply(PARENT, reply)


def test_rewrite_without_module_fence():
    with pytest.raises(EditError, match="not a full kernel module"):
        apply_reply(PARENT, "```python\nx = 1\n```", prefer="rewrite")


def test_unchanged_and_unparsable_results_are_rejected():
    with pytest.raises(EditError, match="unchanged"):
        apply_reply(PARENT, block("    return out", "    return out"))
    with pytest.raises(EditError, match="does not parse: line"):
        apply_reply(PARENT, block("    return out", "    return (out"))


def test_reply_description_skips_code():
    reply = "**Idea:** use 1024-wide blocks.\n" + block("    return out", "    return out") + "\n```python\nx=1\n```"
    assert reply_description(reply) == "Idea: use 1024-wide blocks."
    assert len(reply_description("word " * 200, limit=50)) <= 50


def test_an_ambiguous_search_is_refused_not_applied_to_the_first_match():
    reply = block("    mask = offs < n\n", "    mask = offs < n - 1\n")
    twice = PARENT.replace("    x = tl.load(x_ptr + offs, mask=mask)", "    mask = offs < n\n"
                           "    x = tl.load(x_ptr + offs, mask=mask)")
    with pytest.raises(EditError, match="SEARCH matches 2 places"):
        apply_reply(twice, reply)
    with pytest.raises(EditError, match=r"SEARCH matches 2 places \(lines"):       # after whitespace drift
        apply_reply(twice, block("    mask = offs < n   ", "    mask = offs < n - 1"))


def test_a_search_inside_a_line_does_not_edit_part_of_it():
    # `offs < n` occurs once, but inside `mask = offs < n`: only whole lines are edited
    with pytest.raises(EditError, match="not found in the parent"):
        apply_reply(PARENT, block("offs < n", "offs < n - 1"))


def test_a_result_too_deep_to_parse_is_an_edit_error():
    deep = "    return out" + " + 1" * 5000
    with pytest.raises(EditError, match="cannot be parsed: RecursionError"):
        apply_reply(PARENT, block("    return out", deep))


def test_an_unmatched_long_search_against_similar_code_stays_cheap():
    import time
    def line(i, tag):
        return f"    acc_{i % 9} = tl.load(ptr_{tag} + offs_{i % 5} * stride_{i % 3}, mask=mask_{i % 4}, other=0.0)"
    parent = "\n".join(line(i, "a") for i in range(150)) + "\n"
    search = "\n".join(line(i * 7 + 3, "b") for i in range(110))
    start = time.process_time()
    with pytest.raises(EditError, match="not found in the parent"):
        apply_reply(parent, block(search, "x = 1"))
    # character-level similarity on every window took 160 s of CPU here; a generous bound, not a benchmark
    assert time.process_time() - start < 20


def test_a_rewrite_after_a_quote_of_the_parent_is_the_one_taken():
    new = PARENT.replace("x + y", "y + x")
    reply = ("The current kernel:\n```python\n" + PARENT + "```\nA shorter new version:\n```python\n"
             + new.replace("\n\n\n", "\n\n") + "```\n")
    out = apply_reply(PARENT, reply, prefer="rewrite")
    assert out.kind == "rewrite" and "y + x" in out.source
