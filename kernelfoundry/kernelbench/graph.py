"""The reference as a flat aten graph (JSON), traced at the check shapes, for the seed generator.

``make_fx`` with PyTorch's decompositions (softmax, norms, losses, linear... down to
pointwise ops, reductions, matmuls and views) traces the reference once per check shape;
the generator compares the traces to tell which integers in view sizes are sizes (they
change with the shape) and which are constants.  Runs inside the import sandbox.
"""

from __future__ import annotations

import math
from typing import Any

import torch

#: ops decomposed further than PyTorch's core set (into pointwise ops and plain reductions)
EXTRA = ("_softmax", "_log_softmax", "native_layer_norm", "native_group_norm", "var_mean", "var", "std",
         "logsumexp", "mse_loss", "huber_loss", "smooth_l1_loss", "addmm", "linear", "hardsigmoid",
         "hardswish", "silu", "mish", "softplus", "elu", "leaky_relu", "hardtanh", "selu", "gelu",
         "norm", "linalg_vector_norm", "mean", "clamp_min", "clamp_max", "rsub", "matmul", "baddbmm",
         "_native_batch_norm_legit_functional", "native_batch_norm", "log_sigmoid_forward", "softsign",
         "frobenius_norm", "kl_div", "sigmoid", "hinge_embedding_loss", "triplet_margin_loss",
         "pairwise_distance", "cosine_similarity", "instance_norm", "group_norm", "layer_norm", "relu6",
         "_to_copy", "where")


def decompositions() -> dict:
    from torch._decomp import core_aten_decompositions, get_decompositions
    table = dict(core_aten_decompositions())
    ops = []
    for name in EXTRA:
        packet = getattr(torch.ops.aten, name, None)
        if packet is not None:
            ops.append(packet)
    table.update(get_decompositions(ops))
    for keep in ("sigmoid", "where", "_to_copy"):          # pointwise already: keep them whole
        for overload in getattr(torch.ops.aten, keep).overloads():
            table.pop(getattr(getattr(torch.ops.aten, keep), overload), None)
    # SDPA stays one node (seed_attention's flash kernel): on CPU make_fx records the flash op
    for name in ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
                 "_scaled_dot_product_efficient_attention"):
        packet = getattr(torch.ops.aten, name, None)
        for overload in packet.overloads() if packet is not None else ():
            table.pop(getattr(packet, overload), None)

    def safe_softmax(x, dim, dtype=None):       # SDPA's math path (3D, Ev != E): no any/all reduction
        out = torch.softmax(x, dim=dim, dtype=dtype)
        return torch.where(torch.amax(x, dim, keepdim=True) == float("-inf"), 0.0, out)
    for overload in torch.ops.aten._safe_softmax.overloads():
        table[getattr(torch.ops.aten._safe_softmax, overload)] = safe_softmax
    return table


def _arg(value: Any, index: dict) -> Any:
    if isinstance(value, torch.fx.Node):
        return {"ref": index[value]}
    if isinstance(value, (list, tuple)):
        return [_arg(v, index) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return None                                             # device, layout, memory format


def trace(reference, inputs: list[torch.Tensor]) -> list[dict[str, Any]]:
    """The nodes of the traced reference: {"op", "args", "kwargs", "shape", "dtype"}; the last
    node is ``{"op": "output", "args": [refs]}``."""
    from torch.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(reference, decomposition_table=decompositions())(*inputs)
    nodes, index, n_inputs = [], {}, 0
    for node in gm.graph.nodes:
        index[node] = len(nodes)
        val = node.meta.get("val")
        shape = list(val.shape) if isinstance(val, torch.Tensor) else None
        dtype = str(val.dtype).removeprefix("torch.") if isinstance(val, torch.Tensor) else None
        if node.op == "placeholder":            # the traced function's inputs, in order
            nodes.append({"op": "input", "index": n_inputs, "shape": shape, "dtype": dtype})
            n_inputs += 1
        elif node.op == "output":
            outs = node.args[0]
            nodes.append({"op": "output", "args": [_arg(o, index) for o in
                                                   (outs if isinstance(outs, (list, tuple)) else [outs])]})
        elif node.op == "call_function":
            nodes.append({"op": str(node.target), "args": _arg(list(node.args), index),
                          "kwargs": {k: _arg(v, index) for k, v in node.kwargs.items()},
                          "shape": shape, "dtype": dtype})
        elif node.op == "get_attr":             # a tensor made inside forward: torch.tensor(0.5)
            nodes.append(_constant(getattr(gm, node.target), str(node.target)))
        else:
            raise RuntimeError(f"unexpected graph node {node.op} {node.target}")
        if isinstance(val, torch.Tensor) and nodes[-1]["op"] != "output":
            nodes[-1]["stride"], nodes[-1]["offset"] = list(val.stride()), int(val.storage_offset())
    return nodes


def _constant(value: Any, name: str) -> dict[str, Any]:
    """A constant tensor of the traced graph as a node: one element becomes ``full(shape, value)``
    (the seed embeds the number); a larger one a ``constant_tensor`` node the seed generator refuses."""
    if not isinstance(value, torch.Tensor):
        raise RuntimeError(f"unexpected graph constant {name} ({type(value).__name__})")
    shape, dtype = list(value.shape), str(value.dtype).removeprefix("torch.")
    if value.numel() == 1 and value.device.type != "meta":
        item = value.reshape(()).item()
        if isinstance(item, float) and not math.isfinite(item):
            item = float(item)
        return {"op": "aten.full.default", "args": [shape, item], "kwargs": {"dtype": {"dtype": dtype}},
                "shape": shape, "dtype": dtype}
    return {"op": "constant_tensor", "args": [], "name": name, "numel": int(value.numel()), "shape": shape,
            "dtype": dtype}


def capture(reference_src: str, inputs: list[dict[str, Any]], envs: list[dict[str, int]]):
    """(graphs per check shape, None) or ([], why there is no graph)."""
    ns: dict[str, Any] = {"__name__": "kf_reference_trace"}
    exec(compile(reference_src, "<reference>", "exec"), ns)
    graphs = []
    try:
        for env in envs:
            args = []
            for s in inputs:
                shape = [env[d] if isinstance(d, str) else d for d in s["shape"]]
                dtype = getattr(torch, s["dtype"])
                args.append(torch.randn(shape).to(dtype) if dtype.is_floating_point else torch.zeros(shape, dtype=dtype))
            torch.manual_seed(0)
            graphs.append(trace(ns["reference"], args))
    except Exception as exc:  # noqa: BLE001
        return [], f"the reference cannot be traced to aten ops ({type(exc).__name__}: {str(exc)[:200]})"
    return graphs, None
