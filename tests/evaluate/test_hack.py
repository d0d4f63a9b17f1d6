"""The static hack gate: legitimate kernels pass, each cheat or escape is refused with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelfoundry.evaluate.judge.anticheat import find_violations, hack_gate

REPO = Path(__file__).resolve().parents[2]

HEADER = '''import math
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK": [128, 256], "num_warps": [4], "num_stages": [1]}


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
'''

GOOD_LAUNCH = '''
def launch(x, *, BLOCK, num_warps, num_stages):
    y = torch.empty_like(x)
    n = x.numel()
    copy_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
'''


def rules(source: str) -> set[str]:
    return {v.rule for v in find_violations(source)}


def test_seed_kernels_pass():
    seeds = sorted((REPO / "experiments" / "tasks" / "kernels").glob("*.py"))
    seeds += sorted((REPO / "tests" / "evaluate" / "kernels").glob("*.py"))     # trace test kernels
    assert seeds, "no seed kernels found"
    # a trace test kernel that notices its own re-run through an atomic's result: the trace's
    # defence is tested on it directly, and the static gate now refuses it first
    refused = {"rerun_state.py": "atomic-result"}
    for path in seeds:
        if path.name in refused:
            assert refused[path.name] in rules(path.read_text())
            continue
        gate = hack_gate(path.read_text())
        assert gate.passed, f"{path.name}: {gate.reason}"


LEGIT_EXTRAS = {
    "grid lambda, views, asserts, metadata": '''
def launch(x, *, BLOCK, num_warps, num_stages):
    assert x.is_contiguous() and x.dim() == 2, "x must be a contiguous matrix"
    x = x.view(-1)
    n = x.numel() if x.shape[0] > 0 else 0
    y = x.new_empty(x.shape)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    copy_kernel[grid](x, y, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y.view(x.shape)
''',
    "helper that allocates and a local dict": '''
def _alloc(t):
    return torch.empty(t.shape, device=t.device, dtype=torch.float32)


def launch(x, *, BLOCK, num_warps, num_stages):
    y = _alloc(x)
    sizes = {}
    sizes["n"] = x.numel()
    block = max(BLOCK, triton.next_power_of_2(min(sizes["n"], 1024)))
    copy_kernel[(triton.cdiv(sizes["n"], block),)](x, y, sizes["n"], BLOCK=block)
    return y
''',
    "module constants and libdevice": '''
from triton.language.extra import libdevice
EPS: tl.constexpr = tl.constexpr(1e-6)
OUT_DTYPE = torch.float32
SIZES = (1, 2, 4)


@triton.jit
def tanh_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, libdevice.tanh(tl.load(x_ptr + offs) + EPS), mask=offs < n)
''' + GOOD_LAUNCH,
}


LEGIT_EXTRAS["transposed views and a grid function"] = '''
def launch(x, *, BLOCK, num_warps, num_stages):
    xt = x.t() if x.dim() == 2 else x
    parts = x.chunk(1)
    y = torch.empty_like(parts[0].T.mT)

    def grid(meta):
        return (triton.cdiv(xt.numel(), meta["BLOCK"]),)

    copy_kernel[grid](x.permute(*range(x.dim())), y, x.numel(), BLOCK=BLOCK)
    return y
'''


@pytest.mark.parametrize("name", sorted(LEGIT_EXTRAS))
def test_legitimate_variants_pass(name):
    source = HEADER + LEGIT_EXTRAS[name]
    assert find_violations(source) == [], name


# (description, code appended to HEADER, expected rule, substring of the reason)
HOSTILE = [
    ("import os", "import os\n" + GOOD_LAUNCH, "import", "import os"),
    ("from subprocess", "from subprocess import run\n" + GOOD_LAUNCH, "import", "subprocess"),
    ("import ctypes in launch", GOOD_LAUNCH.replace("    y = ", "    import ctypes\n    y = "), "import", "ctypes"),
    ("torch submodule", "import torch.nn.functional as F\n" + GOOD_LAUNCH, "import", "torch.nn.functional"),
    ("star import", "from math import *\n" + GOOD_LAUNCH, "import", "import *"),
    ("relative import", "from . import child\n" + GOOD_LAUNCH, "import", "relative"),
    ("eval", GOOD_LAUNCH.replace("return y", "return eval('y')"), "builtin", "`eval`"),
    ("exec", GOOD_LAUNCH + "\nexec('import os')\n", "builtin", "`exec`"),
    ("open file", GOOD_LAUNCH.replace("return y", "open('/tmp/x', 'w').write('1')\n    return y"), "builtin", "`open`"),
    ("getattr on module", GOOD_LAUNCH.replace("return y", "getattr(torch, 'soft' + 'max')(x, -1)\n    return y"),
     "builtin", "`getattr`"),
    ("__import__", GOOD_LAUNCH.replace("return y", "__import__('os').system('id')\n    return y"), "dunder", "__import__"),
    ("dunder class walk", GOOD_LAUNCH.replace("return y", "k = ().__class__.__bases__[0].__subclasses__()\n    return y"),
     "dunder", "__class__"),
    ("globals via function", GOOD_LAUNCH.replace("return y", "g = launch.__globals__\n    return y"), "dunder", "__globals__"),
    ("frame walk", GOOD_LAUNCH.replace("return y", "f = (lambda: 0).gi_frame\n    return y"), "attribute", "gi_frame"),
    ("torch softmax in launch", GOOD_LAUNCH.replace("return y", "return torch.softmax(x, -1)"), "module-member",
     "torch.softmax"),
    ("tensor method math", GOOD_LAUNCH.replace("return y", "return x.exp() / x.exp().sum(-1, keepdim=True)"),
     "host-compute", "computes with torch"),
    ("tensor operator", GOOD_LAUNCH.replace("return y", "return y * 1.0 + 0"), "host-compute", "tensor arithmetic"),
    ("in-place copy", GOOD_LAUNCH.replace("return y", "y.copy_(x)\n    return y"), "host-compute", "y.copy_"),
    ("slice write", GOOD_LAUNCH.replace("return y", "y[:] = x\n    return y"), "host-compute", "item assignment"),
    ("helper computing", "def _fallback(t):\n    return t.softmax(-1)\n" + GOOD_LAUNCH.replace(
        "return y", "return _fallback(x)"), "host-compute", "_fallback"),
    ("builtin sum over tensor", GOOD_LAUNCH.replace("return y", "s = sum(x)\n    return y"), "host-compute", "receives tensor"),
    ("math on tensor", GOOD_LAUNCH.replace("return y", "s = math.fsum(x)\n    return y"), "host-compute", "receives tensor"),
    ("compare tensors", GOOD_LAUNCH.replace("return y", "ok = x == y\n    return y"), "host-compute", "compares"),
    ("truth of tensor", GOOD_LAUNCH.replace("return y", "if y:\n        pass\n    return y"), "host-compute", "truth"),
    ("data attribute", GOOD_LAUNCH.replace("return y", "return y.data"), "host-compute", "y.data"),
    ("numpy copy", GOOD_LAUNCH.replace("return y", "a = x.numpy()\n    return y"), "attribute", ".numpy"),
    ("monkeypatch allclose", "torch.allclose = lambda *a, **k: True\n" + GOOD_LAUNCH, "monkeypatch", "torch.allclose"),
    ("monkeypatch in launch", GOOD_LAUNCH.replace("return y", "torch.testing.assert_close = print\n    return y"),
     "monkeypatch", "assert_close"),
    ("function attribute cache", GOOD_LAUNCH.replace("return y", "launch.last = y\n    return y"), "monkeypatch", "launch.last"),
    ("module-level cache dict", "_CACHE = {}\n" + GOOD_LAUNCH, "state", "_CACHE"),
    ("module-level tensor", "BUF = torch.empty(10)\n" + GOOD_LAUNCH, "state", "BUF"),
    ("mutable default", GOOD_LAUNCH.replace("num_stages):", "num_stages, _memo={}):"), "state", "default argument"),
    ("global statement", "LAST = None\n" + GOOD_LAUNCH.replace("    y = ", "    global LAST\n    y = "), "state", "global"),
    ("lru_cache", "import functools\n" + GOOD_LAUNCH.replace("def launch", "@functools.lru_cache\ndef launch"),
     "decorator", "lru_cache"),
    ("autotune", GOOD_LAUNCH.replace("def launch", "@triton.autotune(configs=[], key=[])\ndef launch"),
     "decorator", "autotune"),
    ("try fallback", GOOD_LAUNCH.replace("    return y", "    try:\n        return y\n    except Exception:\n"
                                        "        return torch.empty_like(x)"), "try", "try/except"),
    ("while True", GOOD_LAUNCH.replace("    return y", "    while True:\n        pass\n    return y"), "loop", "while True"),
    ("reference name", GOOD_LAUNCH.replace("return y", "return reference(x)"), "reference", "reference"),
    ("verifier string", GOOD_LAUNCH + "\nNAME = 'kernelfoundry.evaluate.child.entry'\n", "reference", "verifier"),
    ("module alias", "T = torch\n" + GOOD_LAUNCH, "module-alias", "may only be used"),
    ("class definition", "class Cache:\n    pass\n" + GOOD_LAUNCH, "statement", "class"),
    ("module-level call", GOOD_LAUNCH + "\nprint('hello')\n", "statement", "module-level"),
    ("generator frame", GOOD_LAUNCH.replace("return y", "g = (i for i in range(3))\n    return y") +
     "\ndef gen():\n    yield 1\n", "statement", "generators"),
    ("torch inside kernel", "@triton.jit\ndef k2(x_ptr):\n    torch.manual_seed(0)\n" + GOOD_LAUNCH, "kernel", "triton.jit"),
    ("kernel calls host helper", "def helper(v):\n    return v\n\n@triton.jit\ndef k2(x_ptr):\n    helper(x_ptr)\n"
     + GOOD_LAUNCH, "kernel", "host function"),
    ("interpreter internals in kernel", "@triton.jit\ndef k2(x_ptr):\n    x_ptr.handle.data.tofile('/tmp/x')\n"
     + GOOD_LAUNCH, "attribute", ".handle"),
    ("PARAMS used as cache", GOOD_LAUNCH.replace("return y", "PARAMS.setdefault('out', y)\n    return y"), "params", "PARAMS"),
    ("with block", GOOD_LAUNCH.replace("    y = ", "    with torch.no_grad():\n        pass\n    y = "), "statement", "with"),
    ("format string escape", GOOD_LAUNCH.replace("return y", "s = '{0.__class__}'.format(n)\n    return y"), "attribute",
     ".format"),
    # removed from Triton 3.9 (the interpreter raises NotImplementedError): refused with what to use instead
    ("block pointer", "@triton.jit\ndef k2(x_ptr, n):\n    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (16,), (0,))\n"
     + GOOD_LAUNCH, "module-member", "tensor descriptors: use tl.make_tensor_descriptor"),
    ("block pointer advance", "@triton.jit\ndef k2(x_ptr, p):\n    q = p.advance((16,))\n" + GOOD_LAUNCH,
     "attribute", "removed from Triton (3.9)"),
]


@pytest.mark.parametrize("desc,code,rule,text", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_sources_are_refused(desc, code, rule, text):
    source = HEADER + code
    gate = hack_gate(source)
    assert not gate.passed, desc
    found = {v["rule"] for v in gate.details["violations"]}
    assert rule in found, (desc, gate.reason)
    messages = " ".join(v["message"] for v in gate.details["violations"])
    assert text.lower() in messages.lower(), (desc, messages)


def test_reason_names_line_and_is_bounded():
    source = HEADER + "import os\nimport sys\nimport socket\nimport pickle\nimport gc\nimport time\nimport io\n" + GOOD_LAUNCH
    gate = hack_gate(source)
    assert "line 15" in gate.reason and "import os" in gate.reason
    assert "more)" in gate.reason
    assert len(gate.details["violations"]) == 7


def test_syntax_error_raises_for_the_pipeline():
    with pytest.raises(SyntaxError):
        find_violations("def launch(:\n")


def test_huge_or_deep_sources_are_refused_not_crashing():
    assert rules("x = 1\n" * 60000) == {"size"}
    deep = HEADER + "\nVALUE = " + "(" * 90 + "1" + ")" * 90 + "\n" + GOOD_LAUNCH
    assert isinstance(find_violations(deep), list)


MORE_HOSTILE = [
    ("torch.Tensor method", GOOD_LAUNCH.replace("return y", "return torch.Tensor.softmax(x, -1)"), "attribute"),
    ("sum over list of rows", GOOD_LAUNCH.replace("return y", "rows = list(x)\n    s = sum(rows)\n    return y"),
     "host-compute"),
    ("typing evaluates strings", "import typing\n" + GOOD_LAUNCH.replace(
        "return y", "typing.get_type_hints(launch)\n    return y"), "module-member"),
    ("torch ops namespace", GOOD_LAUNCH.replace("return y", "return torch.ops.aten.relu(x)"), "module-member"),
    ("accumulate over rows", GOOD_LAUNCH.replace("return y", "t = 0\n    for r in x:\n        t = t + r\n    return y"),
     "host-compute"),
    ("partial binds tensor", "import functools\n" + GOOD_LAUNCH.replace(
        "return y", "f = functools.partial(torch.empty_like, x)\n    g = functools.reduce(max, [x, y])\n    return y"),
     "host-compute"),
    ("nested cache decorator", "import functools\n" + GOOD_LAUNCH.replace(
        "    y = ", "    @functools.cache\n    def inner():\n        return 1\n    y = "), "decorator"),
    # triton.language re-exports other modules: by name these chains looked like tl submodules
    ("compiler core through tl.random", GOOD_LAUNCH.replace(
        "return y", "tl.random.tl.builtins.exec('y.copy_(x)', {'x': x, 'y': y})\n    return y"), "module-member"),
    ("from-import of an alias module", "from triton.language.random.tl import builtins as b\n" + GOOD_LAUNCH,
     "import"),
    ("pkgutil through tl.extra", GOOD_LAUNCH.replace(
        "return y", "tl.extra.pkgutil.resolve_name('os').system('true')\n    return y"), "module-member"),
    # torch computation hidden behind a closure or a dict display
    ("lambda returning a tensor", GOOD_LAUNCH.replace("return y", "g = lambda: x\n    return g().softmax(-1)"),
     "host-compute"),
    ("nested def returning a tensor", GOOD_LAUNCH.replace(
        "return y", "def g():\n        return x\n    return g().softmax(-1)"), "host-compute"),
    ("dict display holding a tensor", GOOD_LAUNCH.replace("return y", "return {'a': x}['a'].softmax(-1)"),
     "host-compute"),
    ("dict values in a comprehension", GOOD_LAUNCH.replace(
        "return y", "z = [t.exp() for t in {'k': x}.values()]\n    return y"), "host-compute"),
]


@pytest.mark.parametrize("desc,code,rule", MORE_HOSTILE, ids=[h[0] for h in MORE_HOSTILE])
def test_obfuscated_computation_is_refused(desc, code, rule):
    assert rule in rules(HEADER + code), desc


def test_type_inference_reaches_a_fixed_point():
    """Tensors smuggled through long reversed chains of names and helpers are still tracked."""
    names = ("    for _ in range(2):\n        f = e\n        e = d\n        d = c\n        c = b\n        b = a\n"
             "        a = x\n    g = f.exp()\n")
    assert "host-compute" in rules(HEADER + GOOD_LAUNCH.replace("    y = ", names + "    y = ", 1))
    chain = "".join(f"def h{i}(t):\n    return h{i + 1}(t)\n\n" for i in range(14, 0, -1))
    chain = "def h15(t):\n    return t.exp()\n\n" + chain
    source = HEADER + chain + GOOD_LAUNCH.replace("return y", "return h1(x)")
    messages = [v.message for v in find_violations(source)]
    assert any("t.exp()" in m and "h15" in m for m in messages), messages


def test_decorator_callbacks_cannot_compute():
    """triton.heuristics / launch_metadata callbacks get the kernel's tensors at launch time."""
    legit = HEADER.replace("@triton.jit\ndef copy_kernel", '@triton.heuristics({"EVEN": lambda args: args["n"] % '
                           'args["BLOCK"] == 0, "B2": lambda a: max(16, triton.next_power_of_2(a["n"]))})\n'
                           "@triton.jit\ndef copy_kernel") + GOOD_LAUNCH
    assert find_violations(legit) == []
    hostile = HEADER.replace("@triton.jit\ndef copy_kernel", '@triton.heuristics({"X": lambda args: '
                             'args["y_ptr"].copy_(args["x_ptr"].softmax(-1))})\n@triton.jit\ndef copy_kernel')
    assert "decorator" in rules(hostile + GOOD_LAUNCH)
    hostile = HEADER.replace("@triton.jit\ndef copy_kernel", "@triton.jit(launch_metadata=lambda grid, kernel, "
                             "args: print(args))\ndef copy_kernel")
    assert "decorator" in rules(hostile + GOOD_LAUNCH)


def test_tensor_descriptors_allowed_other_triton_tools_not():
    source = (REPO / "tests" / "evaluate" / "kernels" / "sum_atomic_descriptor.py").read_text()
    dotted_use = source.replace("from triton.tools.tensor_descriptor import TensorDescriptor",
                                "import triton.tools.tensor_descriptor").replace(
        "TensorDescriptor.from_tensor", "triton.tools.tensor_descriptor.TensorDescriptor.from_tensor")
    assert find_violations(dotted_use) == []
    assert "module-member" in rules("import triton\nX = triton.tools.disasm\n" + GOOD_LAUNCH)
    assert "module-member" in rules("from triton.tools import disasm\n" + GOOD_LAUNCH)


ATOMIC_KERNEL = '''import torch
import triton
import triton.language as tl
IMPORT

PARAMS = {"BLOCK": [128], "num_warps": [4], "num_stages": [1]}


@triton.jit
def sum_kernel(x_ptr, y_ptr, cnt_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
BODY


def launch(x, *, BLOCK, num_warps, num_stages):
    y = torch.zeros((1,), device=x.device, dtype=torch.float32)
    cnt = torch.zeros((1,), device=x.device, dtype=torch.int32)
    n = x.numel()
    sum_kernel[(triton.cdiv(n, BLOCK),)](x, y, cnt, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y
'''


@pytest.mark.parametrize("body", [
    "    tl.atomic_add(y_ptr, tl.sum(x, axis=0))",
    "    tl.atomic_max(y_ptr, tl.max(x, axis=0), sem='relaxed')",
    "    if tl.program_id(0) == 0:\n        tl.atomic_add(cnt_ptr, 1)\n    tl.atomic_add(y_ptr, tl.sum(x, axis=0))",
])
def test_atomics_as_statements_pass(body):
    assert find_violations(ATOMIC_KERNEL.replace("IMPORT", "").replace("BODY", body)) == []


@pytest.mark.parametrize("body,imports", [
    ("    t = ticket(cnt_ptr, 1)\n    tl.store(y_ptr + t, tl.sum(x, axis=0))",
     "from triton.language import atomic_add as ticket"),
    ("    add = tl.atomic_add\n    add(y_ptr, tl.sum(x, axis=0))", ""),
    ("    old = tl.atomic_xchg(cnt_ptr, 1)\n    tl.atomic_add(y_ptr, tl.sum(x, axis=0) * old)", ""),
    # not work tickets: an offset counter, a counter also read, a step that is not a literal, a returned sum
    ("    t = tl.atomic_add(cnt_ptr + tl.program_id(0) % 2, 1)\n    tl.store(y_ptr + t, tl.sum(x, axis=0))", ""),
    ("    t = tl.atomic_add(cnt_ptr, 1)\n    tl.store(y_ptr + t + tl.load(cnt_ptr), tl.sum(x, axis=0))", ""),
    ("    t = tl.atomic_add(cnt_ptr, n)\n    tl.store(y_ptr + t, tl.sum(x, axis=0))", ""),
    ("    t = tl.atomic_add(y_ptr, tl.sum(x, axis=0))\n    tl.store(y_ptr + 1, t)", ""),
    ("    t = tl.atomic_add(cnt_ptr, 1, mask=n > 0)\n    tl.store(y_ptr + t, tl.sum(x, axis=0))", ""),
])
def test_atomic_results_used_as_values_are_refused(body, imports):
    """An atomic's result tells a program in what order it arrived: outside the work-ticket form its
    work would be neither checked nor traced as a GPU would run it."""
    violations = find_violations(ATOMIC_KERNEL.replace("IMPORT", imports).replace("BODY", body))
    assert "atomic-result" in {v.rule for v in violations}, violations


@pytest.mark.parametrize("body", [
    "    t = tl.atomic_add(cnt_ptr, 1)\n    if t < 2048:\n        tl.atomic_add(y_ptr, tl.sum(x, axis=0))",
    "    tl.atomic_add(y_ptr, tl.sum(x, axis=0), mask=tl.atomic_add(cnt_ptr, 1) < 64)",
    "    tl.store(y_ptr + tl.atomic_add(cnt_ptr, 1, sem='relaxed'), tl.sum(x, axis=0))",
    "    t = tl.atomic_add(cnt_ptr, 2)\n    while t < n:\n        tl.atomic_add(y_ptr + t, 1.0)\n"
    "        t = tl.atomic_add(cnt_ptr, 2)",
])
def test_work_tickets_are_admitted(body):
    """``tl.atomic_add(P, STEP)`` on a counter parameter used for nothing else is a work ticket: the
    verifier schedules the tickets (contract/tickets.py), so work keyed on them is checked and traced
    as work keyed on a program id is; drawing one in a loop is not a wait."""
    assert find_violations(ATOMIC_KERNEL.replace("IMPORT", "").replace("BODY", body)) == []


def test_the_text_triton_reads_is_the_tree_the_rules_read():
    """Triton re-reads kernels from the file as text: no coding declaration but UTF-8, newlines as
    the only line breaks, one `def` line per kernel (the corpus holds the attacks themselves)."""
    good = HEADER + GOOD_LAUNCH
    assert not rules(good)
    assert not rules("# -*- coding: utf-8 -*-\n" + good)
    assert not rules(good.replace("\n", "\r\n"))
    assert not rules(good.replace("def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n",
                                  'def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    """Copies; define nothing."""\n'))
    assert "encoding" in rules("# vim: set fileencoding=unicode_escape :\n" + good)
    assert "line-break" in rules(good.replace("import math\n", "import math  # \x0c\n"))
    assert "line-break" in rules(good.replace("[128, 256]", "[128,\r 256]"))
    hidden = good.replace("def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n",
                          'def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    """\n    def copy_kernel(x_ptr):\n    """\n')
    assert "def-line" in rules(hidden)
