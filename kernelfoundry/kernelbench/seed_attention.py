"""Seed lowering of scaled dot-product attention: a flash-style online-softmax kernel.

``torch.nn.functional.scaled_dot_product_attention`` reaches the seed generator as one node
(:func:`.graph.decompositions` keeps it whole): on CPU ``_scaled_dot_product_flash_attention_for_cpu
(q, k, v, dropout_p, is_causal, *, attn_mask, scale) -> (output, logsumexp)``.  A bool mask
arrives already turned into an additive float one (``where(mask, 0, -inf)``), which, like
any pointwise expression of the mask, is computed inside the kernel, tile by tile, from the
mask's own (broadcast) tensors: no ``B x H x Lq x Lk`` intermediate.

The kernel: one program per (batch x head, ``BLOCK_Q`` query rows); it loops over the keys in
``BLOCK_KV`` blocks: ``S = Q K^T * scale`` (``tl.dot``, fp32 accumulation, fp32 operands in full
fp32 with ``input_precision="ieee"`` as PyTorch computes), plus the mask, masked to the real
rows and keys (and ``key <= query`` when causal: the blocks above the diagonal are not
visited), a running max ``m`` and sum ``l``, the accumulator rescaled by ``exp(m_old - m_new)``
and ``acc += P V`` with ``tl.dot``.  Rows with every key masked give 0, as PyTorch's safe
softmax does.  Head dims are padded to a power of two (at least 16, ``tl.dot``'s minimum) and
masked, so any sequence lengths and head dims work; grouped-query attention (fewer key/value
heads) reads key/value head ``h // (Hq // Hkv)``.  The logsumexp output is not computed:
a graph reading it gets a :class:`.noseed.NoSeed`.  Dropout (random) and bf16 (the
interpreter's bf16 dot is wrong) have no template.
"""

from __future__ import annotations

from typing import Any

from .noseed import NoSeed
from .seed_body import _Body, _base

BLOCKS = {"BLOCK_Q": [64, 32], "BLOCK_KV": [32, 64]}


def attention_kernel(name: str, n_mask: int, n_const: int, prologue: tuple[str, ...], mask_value: str | None,
                     causal: bool, fp32: bool) -> str:
    """The flash-attention kernel text.  Mask input k (``m{k}``, strides over (batch, head, query,
    key)) loads as ``a{k}``; the *prologue* lines compute the additive *mask_value* from them."""
    precision = ', input_precision="ieee"' if fp32 else ""
    params = ["q", "k", "v", "o"]
    for j in range(n_mask):
        params += [f"m{j}", f"m{j}_sb", f"m{j}_sh", f"m{j}_sm", f"m{j}_sn"]
    params += [f"c{j}" for j in range(n_const)]
    params += ["sm_scale", "H", "KV_GROUP", "Lq", "Lk", "D", "DV", "n_qblocks",
               "sqb", "sqh", "sqm", "sqd", "skb", "skh", "skn", "skd", "svb", "svh", "svn", "svd",
               "sob", "soh", "som", "sod",
               "BLOCK_Q: tl.constexpr", "BLOCK_KV: tl.constexpr", "BLOCK_D: tl.constexpr", "BLOCK_DV: tl.constexpr"]
    lines = ["@triton.jit", f"def {name}({', '.join(params)}):",
             "    pid = tl.program_id(0)",
             "    qb = pid % n_qblocks",
             "    bh = pid // n_qblocks",
             "    h = bh % H",
             "    b = bh // H",
             "    hk = h // KV_GROUP",
             "    rm = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)",
             "    rd = tl.arange(0, BLOCK_D)",
             "    rdv = tl.arange(0, BLOCK_DV)",
             "    row_ok = rm < Lq",
             "    qt = tl.load(q + b * sqb + h * sqh + rm[:, None] * sqm + rd[None, :] * sqd,",
             "                 mask=row_ok[:, None] & (rd[None, :] < D), other=0.0)",
             "    k_base = k + b * skb + hk * skh",
             "    v_base = v + b * svb + hk * svh",
             "    m_i = tl.full([BLOCK_Q], float('-inf'), dtype=tl.float32)",
             "    l_i = tl.zeros([BLOCK_Q], dtype=tl.float32)",
             "    acc = tl.zeros([BLOCK_Q, BLOCK_DV], dtype=tl.float32)"]
    # causal (top-left aligned, as PyTorch's is_causal): key j is seen by query i when j <= i,
    # so the blocks past this program's last query row are skipped
    lines.append("    hi = tl.minimum(Lk, (qb + 1) * BLOCK_Q)" if causal else "    hi = Lk")
    lines += ["    for start in range(0, hi, BLOCK_KV):",
              "        rn = start + tl.arange(0, BLOCK_KV)",
              "        col_ok = rn < Lk",
              "        kt = tl.load(k_base + rd[:, None] * skd + rn[None, :] * skn,",
              "                     mask=(rd[:, None] < D) & col_ok[None, :], other=0.0)",
              f"        s = tl.dot(qt, kt{precision}) * sm_scale",
              "        ok = row_ok[:, None] & col_ok[None, :]"]
    if causal:
        lines.append("        ok = ok & (rn[None, :] <= rm[:, None])")
    if mask_value is not None:
        for j in range(n_mask):
            lines += [f"        a{j} = tl.load(m{j} + b * m{j}_sb + h * m{j}_sh + rm[:, None] * m{j}_sm"
                      f" + rn[None, :] * m{j}_sn, mask=ok, other=0)"]
        lines += [f"        {line}" for line in prologue]
        lines.append(f"        s = s + ({mask_value}).to(tl.float32)")
    lines += ["        s = tl.where(ok, s, float('-inf'))",
              "        m_new = tl.maximum(m_i, tl.max(s, axis=1))",
              "        m_use = tl.where(m_new == float('-inf'), 0.0, m_new)   # a row masked so far: no NaN",
              "        alpha = tl.exp(m_i - m_use)",
              "        p = tl.exp(s - m_use[:, None])",
              "        l_i = l_i * alpha + tl.sum(p, axis=1)",
              "        vt = tl.load(v_base + rn[:, None] * svn + rdv[None, :] * svd,",
              "                     mask=col_ok[:, None] & (rdv[None, :] < DV), other=0.0)",
              f"        acc = acc * alpha[:, None] + tl.dot(p.to(vt.dtype), vt{precision})",
              "        m_i = m_new",
              "    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]         # every key masked: 0",
              "    tl.store(o + b * sob + h * soh + rm[:, None] * som + rdv[None, :] * sod,",
              "             out.to(o.dtype.element_ty), mask=row_ok[:, None] & (rdv[None, :] < DV))"]
    return "\n".join(lines) + "\n"


#: op -> (argument names in schema order, number of outputs; the attention output is the first)
SCHEMAS = {
    "_scaled_dot_product_flash_attention_for_cpu": (["query", "key", "value", "dropout_p", "is_causal"], 2),
    "_scaled_dot_product_flash_attention": (["query", "key", "value", "dropout_p", "is_causal",
                                             "return_debug_mask"], 9),
    "_scaled_dot_product_efficient_attention": (["query", "key", "value", "attn_bias", "compute_log_sumexp",
                                                 "dropout_p", "is_causal"], 4),
}


def _args(node: dict, names: list[str]) -> dict[str, Any]:
    a, kw = list(node["args"]), dict(node.get("kwargs") or {})
    out = {name: a[k] for k, name in enumerate(names) if k < len(a)}
    out.update(kw)
    if "attn_bias" in out:
        out["attn_mask"] = out.pop("attn_bias")
    return out


def lower_sdpa(gen, i: int) -> None:
    node, other = gen.g[i], gen.h[i]
    op = node["op"]
    names, n_out = SCHEMAS[_base(op)]
    a, b = _args(node, names), _args(other, names)
    if a.get("dropout_p") not in (None, 0, 0.0):
        raise NoSeed(f"{op} with dropout_p={a['dropout_p']} (random) has no template in the seed generator")
    q, k, v = (gen.tensor(a[n]) for n in ("query", "key", "value"))
    dtype = q["dtype"]
    if dtype not in ("float32", "float16"):
        raise NoSeed(f"{op} on {dtype} has no template (the interpreter's bf16 dot is wrong)" if
                     dtype == "bfloat16" else f"{op} on {dtype} has no template in the seed generator")
    if k["dtype"] != dtype or v["dtype"] != dtype:
        raise NoSeed(f"{op} with mixed dtypes {dtype}/{k['dtype']}/{v['dtype']} has no template")
    if not (q["rank"] == k["rank"] == v["rank"] == 4):
        raise NoSeed(f"{op} on rank {q['rank']}/{k['rank']}/{v['rank']} inputs has no template (4D only)")
    causal = bool(a.get("is_causal"))
    name = f"attention_{i}"
    Q, K, V = q["var"], k["var"], v["var"]
    body = gen.body
    scale = a.get("scale")
    scale_text = f"1.0 / math.sqrt({Q}.shape[3])" if scale is None else gen.num(scale, b.get("scale"))
    full = f"({Q}.shape[0], {Q}.shape[1], {Q}.shape[2], {K}.shape[2])"
    mask_args: list[str] = []
    mask = a.get("attn_mask")
    expr, prologue, n_mask, consts = None, (), 0, []
    if mask is not None:
        if not (isinstance(mask, dict) and "ref" in mask):
            raise NoSeed(f"{op} with attn_mask {mask!r} has no template in the seed generator")
        mv = gen.vals.get(mask["ref"])
        if mv is None:
            raise NoSeed(f"value {mask['ref']} is used before it is computed")
        if len(gen.g[mask["ref"]]["shape"] or []) > 4:
            raise NoSeed(f"{op} with a rank > 4 attn_mask has no template")
        mbody = _Body(gen)
        if mv["kind"] == "expr":
            expr = mbody.expr(mask["ref"])
        elif mv["kind"] == "tensor":
            expr = mbody.leaf(mv)
        elif mv["kind"] == "scalar":
            expr = mbody.const(mv["text"])
        else:
            raise NoSeed(f"{op} takes a {mv['kind']} as attn_mask")
        prologue, n_mask, consts = tuple(mbody.lines), len(mbody.leaves), mbody.consts
        gen.helpers.add("bcast")
        for j, leaf in enumerate(mbody.leaves):
            view = f"{name}_m{j}"
            body.append(f"{view} = bcast({leaf['var']}, {full})")
            mask_args += [view] + [f"{view}.stride({d})" for d in range(4)]
    gen.kernels.append(attention_kernel(name, n_mask, len(consts), prologue, expr, causal, dtype == "float32"))
    for key, values in BLOCKS.items():
        gen.params.setdefault(key, list(values))
    out = f"t{i}"
    body.append(f"{out} = torch.empty(({Q}.shape[0], {Q}.shape[1], {Q}.shape[2], {V}.shape[3]), device=DEV, "
                f"dtype=torch.{dtype})")
    body.append(f"nq{i} = triton.cdiv({Q}.shape[2], BLOCK_Q)")
    args = [Q, K, V, out] + mask_args + consts
    args += [scale_text, f"{Q}.shape[1]", f"{Q}.shape[1] // {K}.shape[1]", f"{Q}.shape[2]", f"{K}.shape[2]",
             f"{Q}.shape[3]", f"{V}.shape[3]", f"nq{i}"]
    for t in (Q, K, V, out):
        args += [f"{t}.stride({d})" for d in range(4)]
    body.append(f"{name}[(nq{i} * {Q}.shape[0] * {Q}.shape[1],)]({', '.join(args)}, BLOCK_Q=BLOCK_Q, "
                f"BLOCK_KV=BLOCK_KV, BLOCK_D=max(16, triton.next_power_of_2({Q}.shape[3])), "
                f"BLOCK_DV=max(16, triton.next_power_of_2({V}.shape[3])), num_warps=num_warps)")
    value = {"kind": "tensor", "var": out, "rank": 4, "contig": True, "dtype": dtype, "input": False}
    gen.vals[i] = {"kind": "tuple", "items": [value] + [None] * (n_out - 1)}


LOWERINGS = {name: lower_sdpa for name in SCHEMAS}
