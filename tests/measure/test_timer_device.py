"""Timers and the device choice, on a CPU."""

import pytest

from kernelfoundry.measure.device import DeviceError, resolve_device
from kernelfoundry.measure.timer import FakeTimer, Hint, summarize, timer_from_spec


def test_fake_timer_is_a_known_function_of_the_prediction():
    timer = FakeTimer(factors={"dram": 1.25}, overhead_s=4e-6, eager_factor=0.9)
    hint = Hint(predicted_s=1e-3, bound="dram", launch_s=6e-6, launches=2)
    assert timer.time(lambda: 1 / 0, hint).median_s == pytest.approx(1.25 * (1e-3 - 6e-6) + 2 * 4e-6)
    assert timer.time(None, Hint(2e-3, bound="eager")).median_s == pytest.approx(1.8e-3)
    assert timer.time(None, Hint(1e-3, bound="l2", launch_s=6e-6)).median_s == pytest.approx(1e-3 - 6e-6 + 4e-6)
    with pytest.raises(ValueError, match="finite, positive prediction"):
        timer.time(None, None)


def test_summary_and_spec():
    t = summarize([3.0, 1.0, 2.0, 4.0, 5.0])
    assert t.median_s == 3.0 and t.spread == pytest.approx((4.0 - 2.0) / 3.0) and t.reps == 5
    fake = timer_from_spec({"kind": "fake", "factors": {"dram": 2}, "overhead_s": 1e-6})
    assert isinstance(fake, FakeTimer) and fake.factors == {"dram": 2.0}
    assert timer_from_spec({"kind": "do_bench"}).name == "do_bench"
    with pytest.raises(ValueError, match="timer kind"):
        timer_from_spec({"kind": "stopwatch"})


def test_device_choice_without_a_gpu():
    assert resolve_device("model", env={}) is None
    assert resolve_device("auto", env={}) is None                  # exactly the model-only search
    with pytest.raises(DeviceError, match="torch sees no GPU") as info:
        resolve_device("cuda", env={})
    assert info.value.exit_code == 2
    with pytest.raises(DeviceError, match="--device must be one of"):
        resolve_device("tpu", env={})
    with pytest.raises(DeviceError, match="--device-top-k"):
        resolve_device("auto", top_k=0, env={})
    assert resolve_device("cuda", env={}, gpus=2)["mode"] == "cuda"     # a cluster's GPUs decide there


def test_fake_device_only_when_asked():
    spec = resolve_device("auto", top_k=3, env={"KERNELFOUNDRY_FAKE_DEVICE": '{"factors": {"dram": 1.5}}'})
    assert spec["mode"] == "fake" and spec["k"] == 3 and spec["timer"]["factors"] == {"dram": 1.5}
    assert resolve_device("model", env={"KERNELFOUNDRY_FAKE_DEVICE": "1"}) is None
    with pytest.raises(DeviceError, match="KERNELFOUNDRY_FAKE_DEVICE"):
        resolve_device("auto", env={"KERNELFOUNDRY_FAKE_DEVICE": "{oops"})


def test_cli_device_cuda_without_gpu_exits_2(capsys):
    from kernelfoundry.verify import main
    assert main(["experiments/tasks/relu.yaml", "experiments/tasks/kernels/relu_naive.py", "--device", "cuda"]) == 2
    assert "torch sees no GPU" in capsys.readouterr().err
