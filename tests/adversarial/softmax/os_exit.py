"""Hard exit from launch."""
import os
import torch

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


def launch(x, *, BLOCK_N, num_warps, num_stages):
    os._exit(0)
