"""Segfault through ctypes."""
import ctypes
import torch

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


def launch(x, *, BLOCK_N, num_warps, num_stages):
    ctypes.string_at(0)
    return torch.empty_like(x)
