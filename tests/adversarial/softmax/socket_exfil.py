"""Opens a network connection."""
import socket
import torch

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


def launch(x, *, BLOCK_N, num_warps, num_stages):
    s = socket.create_connection(("10.0.0.1", 80))
    s.sendall(b"hello")
    return torch.empty_like(x)
