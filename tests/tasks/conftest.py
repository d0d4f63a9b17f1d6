"""Seed kernels run in the Triton interpreter: switch it on before any kernel module loads.

Triton reads ``TRITON_INTERPRET`` when a ``@triton.jit`` function is decorated,
so setting it here, before the seed modules are imported, is enough.
"""
import os

os.environ["TRITON_INTERPRET"] = "1"
