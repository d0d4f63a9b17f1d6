"""Triton's interpreter for the kernels these tests run in-process (read when a kernel is decorated)."""

import os

os.environ["TRITON_INTERPRET"] = "1"
