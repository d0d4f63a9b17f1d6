"""The eager baseline's rules: which ATen path each op takes, and what that costs."""

import pytest

from kernelfoundry.perfmodel.baseline import eager_estimate, profile_function
from kernelfoundry.perfmodel.eager import DO_BENCH, KERNELBENCH, kernels_for, timeline_seconds
from kernelfoundry.perfmodel.hardware import load_hardware

H100 = load_hardware("h100")


def _calls(src, *inputs):
    prof = profile_function("def reference(" + ", ".join(f"x{i}" for i in range(len(inputs))) + "):\n    return "
                            + src + "\n", [(f"x{i}", s, d) for i, (s, d) in enumerate(inputs)])
    return prof.calls


def _names(src, *inputs):
    return [k.name for c in _calls(src, *inputs) for k in kernels_for(c, H100)]


def test_softmax_path_follows_row_length():
    assert "warp per row" in _names("torch.softmax(x0, -1)", ((4096, 1024), "float32"))[0]
    assert "row in registers" in _names("torch.softmax(x0, -1)", ((4096, 4096), "float32"))[0]
    assert "shared memory" in _names("torch.softmax(x0, -1)", ((4096, 11264), "float32"))[0]
    three = kernels_for(_calls("torch.softmax(x0, -1)", ((4096, 393216), "float32"))[0], H100)[0]
    assert "3 reads (0% of the re-reads from L2)" in three.name
    assert three.read_bytes == pytest.approx(3 * 4096 * 393216 * 4)
    few = kernels_for(_calls("torch.softmax(x0, -1)", ((8, 65536), "float32"))[0], H100)[0]
    assert few.read_bytes < 1.5 * 8 * 65536 * 4                 # 8 rows fit in L2: the re-reads hit it


def test_views_cost_nothing_and_fused_functions_are_one_op():
    assert [c.name for c in _calls("torch.matmul(x0, x1)", ((16, 64, 32), "float32"), ((32, 48), "float32"))] == ["mm"]
    calls = _calls("F.scaled_dot_product_attention(x0, x0, x0)", ((2, 4, 128, 64), "float16"))
    assert [c.name for c in calls] == ["scaled_dot_product_attention"]        # not the meta math path
    assert "FlashAttention" in kernels_for(calls[0], H100)[0].name
    drop = _calls("F.dropout(x0, 0.2, training=True)", ((64, 64), "float32"))
    assert [c.name for c in drop] == ["native_dropout"]


def test_layernorm_with_few_rows_is_latency_bound():
    few = eager_estimate(profile_function("def reference(x, w, b):\n    return F.layer_norm(x, (64, 256, 256), w, b)\n",
                                          [("x", (16, 64, 256, 256), "float32"), ("w", (64, 256, 256), "float32"),
                                           ("b", (64, 256, 256), "float32")]), H100)
    many = eager_estimate(profile_function("def reference(x, w, b):\n    return F.layer_norm(x, (1024,), w, b)\n",
                                           [("x", (65536, 1024), "float32"), ("w", (1024,), "float32"),
                                            ("b", (1024,), "float32")]), H100)
    # the same bytes: 16 blocks of 256 threads cannot keep enough loads in flight
    assert few.seconds > 10 * many.seconds


def test_convs_use_tf32_tensor_cores_unless_three_channels():
    tc = _names("F.conv2d(x0, x1)", ((8, 64, 256, 256), "float32"), ((128, 64, 3, 3), "float32"))[0]
    ffma = _names("F.conv2d(x0, x1)", ((8, 3, 256, 256), "float32"), ((64, 3, 3, 3), "float32"))[0]
    dw = _names("F.conv2d(x0, x1, groups=64)", ((8, 64, 256, 256), "float32"), ((64, 1, 3, 3), "float32"))[0]
    assert "tensor cores (TF32)" in tc and "CUDA cores" in ffma and "depthwise" in dw


def test_fp32_gemm_runs_without_tf32_and_fp16_on_tensor_cores():
    f32 = kernels_for(_calls("x0 @ x1", ((4096, 4096), "float32"), ((4096, 4096), "float32"))[0], H100)[0]
    f16 = kernels_for(_calls("x0 @ x1", ((4096, 4096), "float16"), ((4096, 4096), "float16"))[0], H100)[0]
    assert f32.rate == "fp32" and f16.rate == "tc:fp16"
    t32 = eager_estimate(profile_function("def reference(a, b):\n    return a @ b\n",
                                          [("a", (4096, 4096), "float32"), ("b", (4096, 4096), "float32")]), H100)
    assert t32.seconds == pytest.approx(2 * 4096 ** 3 / (66.9e12 * 0.78), rel=0.1)   # KernelBench L1-1: 2.66 ms


def test_losses_write_a_temporary_then_reduce():
    names = _names("F.mse_loss(x0, x1)", ((1024, 1024), "float32"), ((1024, 1024), "float32"))
    assert names == ["mse_loss: unreduced loss", "mse_loss: reduction"]


def test_timeline_host_bound_only_for_tiny_ops():
    tiny = [[3e-6]] * 40                                   # 40 tiny kernels: the host (6 us per op) falls behind
    assert timeline_seconds(tiny, H100, KERNELBENCH) > 40 * 3e-6
    assert timeline_seconds(tiny, H100, DO_BENCH) == pytest.approx(40 * 3e-6)
    big = [[1e-3]] * 3
    assert timeline_seconds(big, H100, KERNELBENCH) == pytest.approx(3e-3)
