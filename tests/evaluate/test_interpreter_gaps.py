"""What the verifier's interpreter fills in: libdevice (computed, dispatched as on a GPU, counted, and
refused with a reason where it cannot be computed) and float atomic exchanges."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"   # before anything imports triton

from pathlib import Path

import pytest
import torch

from kernelfoundry.evaluate.child.entry import ensure_interpreter
from kernelfoundry.evaluate.contract.language import LIBDEVICE_INTERPRETED
from kernelfoundry.evaluate.inprocess import check_trusted, trace_trusted
from kernelfoundry.evaluate.judge.anticheat import hack_gate
from kernelfoundry.task import load_task

ensure_interpreter()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GELU = load_task(ROOT / "experiments" / "tasks" / "gelu.yaml")
GELU_ERF = '''
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

PARAMS = {"BLOCK": [1024], "num_warps": [4]}


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, *, BLOCK, num_warps):
    y = torch.empty_like(x)
    n = x.numel()
    gelu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=num_warps)
    return y
'''


def test_every_interpreted_function_is_in_the_installed_triton():
    from triton.language.extra.cuda import libdevice as cuda
    missing = sorted(n for n in LIBDEVICE_INTERPRETED if not hasattr(cuda, n))
    assert not missing, f"not in this Triton's CUDA libdevice: {missing}"


@triton.jit
def _unary(x_ptr, y_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if FN == 0:
        y = libdevice.erf(x)
    elif FN == 1:
        y = libdevice.tanh(x)
    elif FN == 2:
        y = libdevice.expm1(x)
    elif FN == 3:
        y = libdevice.log1p(tl.abs(x))
    elif FN == 4:
        y = libdevice.pow(tl.abs(x), 1.5)
    elif FN == 5:
        y = libdevice.atan2(x, x + 2.0)
    elif FN == 6:
        y = libdevice.erfinv(x * 0.25)
    else:
        y = libdevice.fma(x, x, 1.0)
    tl.store(y_ptr + offs, y, mask=offs < n)


@pytest.mark.parametrize("fn, ref", [
    (0, torch.erf), (1, torch.tanh), (2, torch.expm1), (3, lambda x: torch.log1p(x.abs())),
    (4, lambda x: x.abs() ** 1.5), (5, lambda x: torch.atan2(x, x + 2.0)), (6, lambda x: torch.erfinv(x * 0.25)),
    (7, lambda x: x * x + 1.0)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_libdevice_functions_compute_in_the_interpreter(fn, ref, dtype):
    x = torch.randn(300, generator=torch.Generator().manual_seed(fn), dtype=dtype).clamp(-3.5, 3.5)
    y = torch.full_like(x, float("nan"))
    _unary[(1,)](x, y, x.numel(), FN=fn, BLOCK=512)
    assert y.dtype == dtype
    torch.testing.assert_close(y, ref(x), rtol=2e-6, atol=1e-6)


def test_an_fp16_argument_is_refused_as_the_gpu_compiler_refuses_it():
    x = torch.randn(64, dtype=torch.float16)
    y = torch.empty_like(x)
    with pytest.raises(Exception, match="libdevice.erf has no variant for argument types .*fp32 or fp64"):
        _unary[(1,)](x, y, x.numel(), FN=0, BLOCK=64)


def test_an_exact_gelu_through_libdevice_passes_the_checks_and_counts_one_transcendental_per_element():
    gate = check_trusted(GELU_ERF, GELU)
    assert gate.passed, gate.reason
    trace_gate, traces = trace_trusted(GELU_ERF, GELU)
    assert trace_gate.passed, trace_gate.reason
    launch = traces[0].launches[0]
    assert launch.transcendental_ops == pytest.approx(1024)      # per program: one erf per element


def test_libdevice_functions_the_interpreter_cannot_compute_are_refused_with_a_reason():
    source = GELU_ERF.replace("libdevice.erf(x * 0.7071067811865476)",
                              "libdevice.int_as_float(libdevice.float_as_int(x))")
    gate = hack_gate(source)
    assert not gate.passed
    assert "libdevice.float_as_int` is not allowed" in gate.reason and "float math functions only" in gate.reason
    assert hack_gate(GELU_ERF).passed


@triton.jit
def _exchange(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_xchg(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32])
def test_atomic_exchange_of_floats_runs_as_on_a_gpu(dtype):
    """The interpreter's atomics exchanged integers only ("Unsupported data type" for fp32)."""
    x = torch.randn(100).to(dtype)
    y = torch.arange(100).to(dtype)
    _exchange[(1,)](x, y, 100, BLOCK=128)
    assert torch.equal(y, x)


def test_a_scalar_predicate_in_a_block_mask_is_a_mask():
    """``(offs < n) & (pid < limit)`` is legal on a GPU; the interpreter refused it ("mask has
    unsupported dtype") because the broadcast scalar predicate came out as int32."""
    relu = load_task(ROOT / "experiments" / "tasks" / "relu.yaml")
    source = (ROOT / "experiments" / "tasks" / "kernels" / "relu_naive.py").read_text().replace(
        "    mask = offs < n_elements\n",
        "    mask = (offs < n_elements) & (tl.program_id(0) < tl.num_programs(0))\n")
    assert "num_programs" in source
    gate = check_trusted(source, relu)
    assert gate.passed, gate.reason


@triton.jit
def _grid_stride_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    n_blocks = tl.cdiv(n, BLOCK)
    for blk in range(tl.program_id(0), n_blocks, tl.num_programs(0)):
        offs = blk.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_a_loop_variable_is_a_scalar_tensor_as_on_a_gpu():
    """``for blk in range(pid, n, step)`` gives an i32 tensor on a GPU (``blk.to(tl.int64)`` is
    legal); the interpreter gave a Python int ("'int' object has no attribute 'to'")."""
    x = torch.randn(1000)
    y = torch.zeros_like(x)
    _grid_stride_copy[(3,)](x, y, x.numel(), BLOCK=128)
    assert torch.equal(y, x)
