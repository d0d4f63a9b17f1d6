"""Swish (x * sigmoid(x)) followed by a constant scale, on a large 2-D activation."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = scale * x * sigmoid(x), elementwise."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * x * torch.sigmoid(x)


rows = 2048
cols = 8191


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [1.5]
