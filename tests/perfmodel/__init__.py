"""Triton reads TRITON_INTERPRET when it is first imported and when a kernel is decorated; these
tests import torch (which may import triton) at collection, so the interpreter is switched on
before anything else runs (tests that trace kernels in-process need it)."""

import os

os.environ["TRITON_INTERPRET"] = "1"
