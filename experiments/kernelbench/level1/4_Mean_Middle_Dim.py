"""Mean over the middle dimension of a 3-D tensor (a strided reduction)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y[b, n] = mean over r of x[b, r, n]."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


batch = 32
reduce_len = 777
inner = 2049


def get_inputs():
    return [torch.randn(batch, reduce_len, inner)]


def get_init_inputs():
    return [1]
