"""Reaches eval and os through getattr and string building."""
import torch

PARAMS = {"BLOCK_N": [256], "num_warps": [4], "num_stages": [1]}


def launch(x, *, BLOCK_N, num_warps, num_stages):
    ev = getattr(__builtins__, "ev" + "al")
    ev("__imp" + "ort__('o' + 's').system('id')")
    return getattr(torch, "soft" + "max")(x, -1)
