"""Allocates and touches memory until the machine runs out."""
import torch

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


def launch(x, *, BLOCK_N, num_warps, num_stages):
    hoard = [torch.ones(1 << 28) for _ in range(1000)]
    return torch.empty_like(x)
