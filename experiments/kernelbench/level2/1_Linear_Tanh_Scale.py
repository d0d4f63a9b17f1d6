"""A fully connected layer followed by tanh and a scalar multiply."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = tanh(x @ W^T + b) * factor, with W and b held by an nn.Linear."""

    def __init__(self, in_features: int, out_features: int, factor: float):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.fc(x)) * self.factor


batch = 512
in_features = 4096
out_features = 3000
factor = 0.75


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features, factor]
