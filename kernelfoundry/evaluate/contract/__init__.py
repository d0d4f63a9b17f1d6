"""What the verifier's child and judge agree on before a run: the candidate language's tables
(``language``) and the correctness shapes shaped by the kernel's tiling (``span_shape``)."""
