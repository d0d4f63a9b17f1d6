"""launch takes two inputs, the task has one."""
import torch

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


def launch(x, y, *, BLOCK_N, num_warps, num_stages):
    return torch.empty_like(x)
