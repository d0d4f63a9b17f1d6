"""Thread bomb at import."""
import threading
import torch

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}

for _ in range(100000):
    threading.Thread(target=lambda: None).start()


def launch(x, *, BLOCK_N, num_warps, num_stages):
    return torch.empty_like(x)
