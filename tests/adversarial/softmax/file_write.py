"""Writes a file outside its sandbox."""
import torch

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


def launch(x, *, BLOCK_N, num_warps, num_stages):
    with open("/tmp/kf_adversarial_marker", "w") as f:
        f.write("pwned")
    return torch.empty_like(x)
