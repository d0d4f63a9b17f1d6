"""Work balance over programs: a few heavy programs the trace rarely samples are refused."""

import numpy as np
import pytest

from kernelfoundry.evaluate.program_balance import concentrated_work


def test_one_program_in_64_doing_the_skipped_rows_is_refused():
    work = np.ones(70)
    work[7] += 26                      # program 7 does the 26 rows the last 3/8 of the grid skipped
    work[44:] = 0
    reason = concentrated_work(work, "row_sum")
    assert reason is not None and "row_sum" in reason and "[7]" in reason


@pytest.mark.parametrize("name, work", [
    ("even", np.ones(200)),
    ("partial edge tiles", np.r_[np.full(99, 4.0), [1.0]]),
    ("causal ramp", np.arange(1, 129, dtype=float)),
    ("persistent grid larger than the tiles", np.r_[np.ones(9), np.zeros(123)]),
    ("heavy first and last programs", np.r_[[50.0], np.ones(60), [50.0]]),
    ("a quarter of the programs twice as heavy", np.tile([2.0, 1.0, 1.0, 1.0], 16)),
    ("small grid", np.r_[np.ones(10), [100.0], np.ones(3)]),
])
def test_honest_work_distributions_pass(name, work):
    assert concentrated_work(work, "k") is None, name


def test_many_heavy_programs_are_not_rare_and_pass():
    work = np.ones(64)
    work[::4] = 10.0                   # a quarter of the programs heavy: the random picks see them
    assert concentrated_work(work, "k") is None


def test_a_few_heavy_programs_with_a_small_share_pass():
    work = np.ones(256)
    work[100] = 5.0                    # heavy, but 2% of the work: sampling error, not hidden work
    assert concentrated_work(work, "k") is None
