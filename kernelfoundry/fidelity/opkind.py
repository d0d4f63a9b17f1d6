"""Which op kind a task is, from the aten ops its reference dispatches (its reference profile).

The kinds are those of the fidelity datasets (KernelBench's families): matmul, gemm+epilogue,
elementwise, reduction, softmax, norm, scan, loss, pooling, conv, conv-transposed,
conv-depthwise, attention.  The first rule that matches decides, from the most specific
(convolutions, attention) to the most generic (elementwise).
"""

from __future__ import annotations

from ..perfmodel import GEMMS, LOSSES, POOLS, REDUCTIONS, SCANS, ReferenceProfile, profile_reference
from ..task import Task

KINDS = ("matmul", "gemm+epilogue", "elementwise", "reduction", "softmax", "norm", "scan", "loss", "pooling",
         "conv", "conv-transposed", "conv-depthwise", "attention")
LABELS = {"matmul": "matrix multiplications", "gemm+epilogue": "GEMMs with epilogues", "elementwise": "elementwise ops",
          "reduction": "reductions", "softmax": "softmaxes", "norm": "normalizations", "scan": "scans",
          "loss": "losses", "pooling": "pooling ops", "conv": "convolutions",
          "conv-transposed": "transposed convolutions", "conv-depthwise": "depthwise convolutions",
          "attention": "attention", "all": "all op kinds"}
NORM_OPS = frozenset({"native_layer_norm", "native_group_norm", "native_batch_norm", "_native_batch_norm_legit",
                      "_native_batch_norm_legit_no_training", "_fused_rms_norm", "cudnn_batch_norm"})
SOFTMAX_OPS = frozenset({"_softmax", "_log_softmax", "_safe_softmax"})
#: Ops a plain matrix product may come with without becoming a "GEMM with an epilogue".
MATMUL_COMPANIONS = frozenset({"triu", "tril", "diag", "diag_embed", "clone", "copy_", "_to_copy"})


def classify(profile: ReferenceProfile) -> str:
    """The op kind of a reference from its recorded calls ("elementwise" when nothing else fits)."""
    calls = profile.calls
    names = [c.name for c in calls]
    for c in calls:
        if c.name in ("convolution", "_convolution", "cudnn_convolution"):
            x, out = c.inputs[0], c.outputs[0]
            groups = int(c.arg(8, "groups", 1) or 1)
            if bool(c.arg(6, "transposed", False)):
                return "conv-transposed"
            if groups > 1 and groups == x.shape[1] and out.shape[1] % x.shape[1] == 0:
                return "conv-depthwise"
            return "conv"
    if "scaled_dot_product_attention" in names:
        return "attention"
    if any(n in GEMMS for n in names):
        others = [n for n in names if n not in GEMMS and n not in MATMUL_COMPANIONS]
        return "gemm+epilogue" if others else "matmul"
    if any(n in POOLS for n in names):
        return "pooling"
    if any(n in SCANS for n in names):
        return "scan"
    if any(n in LOSSES or n.startswith("nll_loss") for n in names):
        return "loss"
    if profile.output_bytes <= 8 and profile.input_count >= 2:      # a scalar from two or more tensors
        return "loss"
    if any(n in NORM_OPS for n in names):
        return "norm"
    if any(n in SOFTMAX_OPS for n in names):
        return "softmax"
    if any(n in REDUCTIONS or n == "logsumexp" for n in names):
        largest_in = max((t.nbytes for c in calls for t in c.inputs), default=0.0)
        return "norm" if profile.output_bytes >= 0.5 * largest_in else "reduction"
    return "elementwise"


def op_kind(task: Task) -> str:
    """The op kind of *task*, from its reference profile at the first target shape."""
    profile = profile_reference(task, task.target_shapes[0])
    if not profile.exact:
        return "elementwise"
    return classify(profile)
