"""Passes the static checks; importing it divides by zero."""
import torch

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}
SCALE = 1 // 0


def launch(x, *, BLOCK_N, num_warps, num_stages):
    return torch.empty_like(x)
