"""Generated seeds for attention: SDPA (plain, causal, bool and additive masks, cross-attention) lowers
to one flash-style kernel; the 3D math path and the explicit softmax(QK^T)V form lower op by op; every
seed passes the correctness gate at the check shapes (Triton's interpreter)."""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest


HEAD = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
TAIL = "\n\ndef get_init_inputs():\n    return []\n"


def _problem(sizes: str, forward: str, inputs: str) -> str:
    return (HEAD + sizes + "\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
            f"    def forward{forward}\n\n\ndef get_inputs():\n    return [{inputs}]\n" + TAIL)


QKV = ("torch.randn(batch_size, heads, seq_q, head_dim), torch.randn(batch_size, heads, seq_k, head_dim), "
       "torch.randn(batch_size, heads, seq_k, head_dim)")

#: three problems (an import and a check each: the file stays fast), each returning several attentions
PROBLEMS = {
    "self_attention": _problem(    # plain; causal with a given scale; an additive float mask (broadcast heads)
        "batch_size = 2\nheads = 4\nseq_q = 37\nseq_k = 37\nhead_dim = 24",
        "(self, q, k, v, bias):\n        return (F.scaled_dot_product_attention(q, k, v),\n"
        "                F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),\n"
        "                F.scaled_dot_product_attention(q, k, v, attn_mask=bias))",
        QKV + ", torch.randn(batch_size, 1, seq_q, seq_k)"),
    "cross_attention": _problem(   # Lq != Lk: a bool mask; queries from a pointwise op (materialised first)
        "batch_size = 2\nheads = 4\nseq_q = 37\nseq_k = 45\nseq_x = 19\nhead_dim = 24",
        "(self, q, k, v, mask, x):\n        return (F.scaled_dot_product_attention(q, k, v, attn_mask=mask),\n"
        "                F.scaled_dot_product_attention(torch.tanh(x), k, v))",
        QKV + ", torch.rand(seq_q, seq_k) > 0.3, torch.randn(batch_size, heads, seq_x, head_dim)"),
    "op_by_op": _problem(          # no heads dim: PyTorch's math path; the explicit softmax(QK^T / sqrt(d)) V
        "batch_size = 2\nheads = 4\nseq_q = 37\nseq_k = 45\nhead_dim = 24",
        "(self, q, k, v):\n        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))\n"
        "        return (F.scaled_dot_product_attention(q[0], k[0], v[0]), F.softmax(att, dim=-1) @ v)", QKV),
}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """Each problem imported once (a sandboxed job each, two at a time)."""
    from kernelfoundry.kernelbench.importer import import_problem
    root = tmp_path_factory.mktemp("attn")
    old = os.environ.get("KERNELFOUNDRY_KB_CACHE")
    os.environ["KERNELFOUNDRY_KB_CACHE"] = str(root / "cache")
    paths = {}
    for name, source in PROBLEMS.items():
        paths[name] = root / f"{name}.py"
        paths[name].write_text(source)
    try:
        with ThreadPoolExecutor(2) as pool:
            done = dict(zip(paths, pool.map(import_problem, paths.values())))
    finally:
        if old is None:
            os.environ.pop("KERNELFOUNDRY_KB_CACHE", None)
        else:
            os.environ["KERNELFOUNDRY_KB_CACHE"] = old
    return root, done


def _check(root, imp, name):
    from kernelfoundry.evaluate.inprocess import check_trusted
    from kernelfoundry.kernelbench.importer import write_task
    from kernelfoundry.task import load_task
    assert imp.seed_source is not None, f"{name}: {imp.no_seed_reason}"
    task = load_task(write_task(imp, root / name / "task.yaml"))
    gate = check_trusted(imp.seed_source, task, profiles=("normal", "large"))
    assert gate.passed, f"{name}: {gate.reason}"
    return task


def _kernels(source: str) -> list[str]:
    return re.findall(r"@triton\.jit\ndef (\w+)\(", source)


def _kernel_text(source: str, name: str) -> str:
    return source.split(f"def {name}(", 1)[1].split("\ndef ", 1)[0]


def test_sdpa_lowers_to_flash_kernels_that_pass_the_checks(imported):
    """Plain, causal (explicit scale) and float-mask SDPA: one flash kernel each, nothing else."""
    root, done = imported
    imp = done["self_attention"]
    task = _check(root, imp, "self_attention")
    src = imp.seed_source
    kernels = _kernels(src)
    assert len(kernels) == 3 and all(k.startswith("attention_") for k in kernels)
    plain, causal, masked = (_kernel_text(src, k) for k in kernels)
    for kernel in (plain, causal, masked):
        assert kernel.count("tl.dot(") == 2 and kernel.count('input_precision="ieee"') == 2   # fp32: QK^T, PV
        assert "for start in range(0, hi, BLOCK_KV)" in kernel and "m_i = m_new" in kernel      # online softmax
    assert "tl.minimum(Lk, (qb + 1) * BLOCK_Q)" in causal and "rn[None, :] <= rm[:, None]" in causal
    assert "<= rm" not in plain + masked and "hi = Lk" in plain
    assert "a0 = tl.load(m0" in masked and "a0" not in plain + causal           # the bias, tile by tile
    launch = src.split("def launch", 1)[1]
    assert launch.count("1.0 / math.sqrt(q.shape[3])") == 2 and ", 0.3, " in launch
    assert "bcast(bias, (q.shape[0], q.shape[1], q.shape[2], k.shape[2]))" in launch
    assert "torch." not in src.split("def launch", 1)[0].split("import triton", 1)[1]
    params = src.split("PARAMS = ", 1)[1].split("\n", 1)[0]
    assert "'BLOCK_Q'" in params and "'BLOCK_KV'" in params
    assert all(env["q_2"] % 16 for env in task.check_shapes)      # sequence lengths: sizes, checked odd


def test_cross_attention_with_a_bool_mask(imported):
    """Lq != Lk; the bool mask's where(mask, 0, -inf) is computed inside the kernel, no L x S buffer."""
    root, done = imported
    imp = done["cross_attention"]
    task = _check(root, imp, "cross_attention")
    src = imp.seed_source
    kernels = _kernels(src)
    assert [k.split("_")[0] for k in kernels] == ["attention", "pointwise", "attention"]
    masked = _kernel_text(src, kernels[0])
    assert "tl.where(a0, 0.0, float('-inf'))" in masked
    assert "bcast(mask," in src
    assert all(env["q_2"] != env["k_2"] for env in task.check_shapes)


def test_math_path_and_explicit_attention_lower_op_by_op(imported):
    """3D SDPA (PyTorch's math path: bmm, safe softmax, bmm) and softmax(QK^T / sqrt(d)) V written out:
    matmuls and reductions (no flash fusion), correct at the check shapes."""
    root, done = imported
    imp = done["op_by_op"]
    _check(root, imp, "op_by_op")
    kernels = _kernels(imp.seed_source)
    assert sum(k.startswith("matmul_") for k in kernels) == 4
    assert sum(k.startswith("reduce_") for k in kernels) >= 4 and not any(k.startswith("attention_") for k in kernels)


def test_sdpa_refusals_name_the_reason():
    """bf16 gets no seed (the interpreter's bf16 dot), nor a graph reading the logsumexp output."""
    import torch
    import torch.nn.functional as F

    from kernelfoundry.kernelbench.graph import trace
    from kernelfoundry.kernelbench.noseed import NoSeed
    from kernelfoundry.kernelbench.seedgen import generate

    def gen(fn, dtype=torch.float32):
        envs = [{"S": s} for s in (37, 45)]
        graphs = [trace(fn, [torch.randn(2, 2, s, 24).to(dtype) for _ in range(3)]) for s in (37, 45)]
        inputs = [{"name": n, "shape": [2, 2, "S", 24], "dtype": str(dtype).split(".")[1], "role": "input"}
                  for n in ("q", "k", "v")]
        return generate(graphs, envs, inputs, {"S": (0, 2)})

    sdpa = F.scaled_dot_product_attention
    assert [n["op"] for n in trace(sdpa, [torch.randn(1, 1, 5, 8)] * 3)][3] == \
        "aten._scaled_dot_product_flash_attention_for_cpu.default"                   # one node, not decomposed
    ok = gen(lambda q, k, v: sdpa(q, k, v))
    assert _kernels(ok) == ["attention_3"] and "def launch(q, k, v, *," in ok
    with pytest.raises(NoSeed, match="bf16"):
        gen(lambda q, k, v: sdpa(q, k, v), torch.bfloat16)
    with pytest.raises(NoSeed, match="not supported"):
        gen(lambda q, k, v: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)[1])
