"""Which rule prices which aten op; the fallback for ops without one."""

from __future__ import annotations

from typing import Callable

from ..hardware import HardwareSpec
from .kernels import EagerKernel
from .record import AtenCall
from .rules_conv import POOLS, convolution, pooling
from .rules_matmul import GEMMS, attention, gemm
from .rules_norm import LOSSES, batch_norm, group_norm, layer_norm, loss, nll_loss, softmax
from .rules_pointwise import concatenate, dropout, elementwise, flip, gather
from .rules_reduce import REDUCTIONS, SCANS, logsumexp, reduction, scan

Rule = Callable[[AtenCall, HardwareSpec], list[EagerKernel]]

RULES: dict[str, Rule] = {
    "convolution": convolution, "_convolution": convolution, "cudnn_convolution": convolution,
    "scaled_dot_product_attention": attention,
    "_softmax": softmax, "_log_softmax": softmax, "_safe_softmax": softmax, "softmax": softmax,
    "log_softmax": softmax,
    "native_layer_norm": layer_norm, "native_group_norm": group_norm,
    "native_batch_norm": batch_norm, "_native_batch_norm_legit": batch_norm, "cudnn_batch_norm": batch_norm,
    "_native_batch_norm_legit_no_training": batch_norm, "_native_batch_norm_legit_functional": batch_norm,
    "nll_loss_forward": nll_loss, "nll_loss2d_forward": nll_loss, "nll_loss": nll_loss,
    "logsumexp": logsumexp, "cat": concatenate, "flip": flip, "native_dropout": dropout,
    "index": gather, "gather": gather, "index_select": gather, "embedding": gather, "take": gather,
}
for _names, _rule in ((GEMMS, gemm), (POOLS, pooling), (LOSSES, loss), (REDUCTIONS, reduction), (SCANS, scan)):
    for _name in _names:
        RULES.setdefault(_name, _rule)


def kernels_for(call: AtenCall, spec: HardwareSpec) -> list[EagerKernel]:
    """The kernels eager PyTorch launches for *call* on *spec* (at least one)."""
    rule = RULES.get(call.name)
    if rule is None:
        out = elementwise(call, spec)
        for k in out:
            k.notes.append(f"no rule for aten.{call.name}: priced as one elementwise pass")
        return out
    return rule(call, spec) or elementwise(call, spec)
