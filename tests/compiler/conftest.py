"""Shared fixtures: one compile cache per test session, seed signatures captured once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"


@pytest.fixture(scope="session")
def compile_cache(tmp_path_factory):
    from kernelfoundry.compiler.cache import CompileCache
    return CompileCache(tmp_path_factory.mktemp("compile-cache"))


def capture_module(path: Path, inputs: list, params: dict | None = None) -> dict:
    """``{"default": [signatures]}`` of a trusted test kernel file (first value of each PARAMS entry
    unless *params* is given), captured by a dry run under the interpreter."""
    from kernelfoundry.candidate import default_config, parse_param_space
    from kernelfoundry.compiler.capture import capture_signatures
    from kernelfoundry.harness.loader import import_candidate
    import sys
    import tempfile
    source = path.read_text()
    os.environ["TRITON_INTERPRET"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        module, _ = import_candidate(source, Path(tmp))
        try:
            config = params or default_config(parse_param_space(source))
            return {"default": capture_signatures(module.launch, inputs, config)}
        finally:
            sys.modules.pop(module.__name__, None)
