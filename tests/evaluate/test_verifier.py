"""The Verifier object: typed options, the verdict cache and the device step in one place."""

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.evaluate import VerdictCache, Verifier, VerifyOptions
from kernelfoundry.task import load_task

BROKEN = "def kernel(:\n"          # fails the load gate in the driver, before any sandbox


class RecordingDevice:
    def __init__(self):
        self.calls = []

    def confirm(self, verdict, result, source, seed):
        self.calls.append(seed)
        return {**verdict, "measured": {"passed": True}}


def test_options_are_checked_and_carry_only_what_differs_from_the_defaults():
    assert VerifyOptions().to_dict() == {}
    options = VerifyOptions(max_kernel_configs=2, tune=False)
    assert options.to_dict() == {"max_kernel_configs": 2, "tune": False}
    assert VerifyOptions.from_dict(options.to_dict()) == options
    with pytest.raises(ValueError, match="bogus"):
        VerifyOptions.from_dict({"bogus": 1})
    with pytest.raises(ValueError, match="max_kernel_configs"):
        VerifyOptions(max_kernel_configs=0)
    with pytest.raises(ValueError, match="mode"):
        VerifyOptions(mode="thread")


def test_a_verdict_is_cached_and_read_back_and_never_cached_with_a_device(tmp_path):
    task = load_task(REPO_DIR / "experiments/tasks/relu.yaml")
    cache = VerdictCache(tmp_path / "v.sqlite", "ctx")
    verifier = Verifier(task, ["h100"], VerifyOptions(compile=False), verdict_cache=cache)
    result, verdict = verifier.verify(BROKEN)
    assert result is not None and not result.passed and verdict["gate"] == "load" and "cached" not in verdict
    again, hit = verifier.verify(BROKEN)
    assert again is None and hit["cached"] is True and hit["reason"] == verdict["reason"]
    device = RecordingDevice()
    measured = Verifier(task, ["h100"], VerifyOptions(compile=False), verdict_cache=cache, device=device)
    result, verdict = measured.verify(BROKEN)
    assert result is not None and "cached" not in verdict      # a device's verdict is never read from the cache
    assert device.calls == []                                  # a failed candidate is not measured
