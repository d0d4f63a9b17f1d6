"""The honest-kernel corpus: correct, honest kernels in real Triton styles must pass the verifier.

Each entry of honest_corpus.yaml is verified against its task (the folder names it) the way
test_adversarial.py verifies its twins: ``pipeline.verify`` on one hardware (h100) in the sandbox.
``expect: pass`` entries must pass.  ``expect: refused`` entries are false rejections recorded with
their gate and reason: strict xfails that only count when the verifier refuses them for the recorded
reason, so the test flips (XPASS fails) when the verifier learns to accept them, and fails outright
if the refusal moves to another gate or reason.  The whole corpus is verified once per module, two
at a time (as the adversarial corpus is), and each test reads its file's verdict.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from kernelfoundry.evaluate.pipeline import default_limits, verify
from kernelfoundry.sandbox.process import shutdown_fork_servers
from kernelfoundry.task import load_task

HERE = Path(__file__).resolve().parent
TASKS = HERE.parents[1] / "experiments" / "tasks"
CORPUS = yaml.safe_load((HERE / "honest_corpus.yaml").read_text())
EXPECTED = yaml.safe_load((HERE / "expected.yaml").read_text())
#: Sandbox wall limit per verification (s): a guard against a hang, well above the slowest entry
#: (about 40 s on 2 quiet cores).  Memory stays at the verifier's default limits: the static
#: stream-K kernel needs more than the 768 MB test_adversarial.py gives its two parallel workers.
WALL_S = 120.0


class RecordedRefusal(Exception):
    """The verifier refused an ``expect: refused`` entry at the recorded gate, with the recorded reason."""


def _params():
    for rel in sorted(CORPUS):
        entry = CORPUS[rel]
        if entry["expect"] == "refused":
            why = f"refused at {entry['gate']}: {entry['reason']} ({entry['why_honest']})"
            yield pytest.param(rel, id=rel, marks=pytest.mark.xfail(raises=RecordedRefusal, strict=True, reason=why))
        else:
            yield pytest.param(rel, id=rel)


@pytest.fixture(scope="module")
def verdicts():
    """Every corpus entry verified (two at a time, one fork server each): rel -> VerifyResult."""
    def one(rel):
        task = load_task(TASKS / f"{rel.split('/')[0]}.yaml")
        return rel, verify(task, (HERE / rel).read_text(), ["h100"], limits=default_limits(task, WALL_S))

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            yield dict(pool.map(one, sorted(CORPUS)))
    finally:
        shutdown_fork_servers()


def test_corpus_entries_are_well_formed_and_nothing_is_orphaned():
    honest_files = {str(p.relative_to(HERE)) for p in HERE.glob("*/honest/*.py")}
    used_by_expected = ({e["twin"] for e in EXPECTED.values() if "twin" in e}
                        | {e["honest"] for e in EXPECTED.values() if "honest" in e})
    orphans = sorted(honest_files - set(CORPUS) - used_by_expected)
    assert not orphans, f"honest kernels listed nowhere: {orphans}"
    assert not set(CORPUS) & used_by_expected, "twins of expected.yaml are tested by test_adversarial.py"
    for rel, entry in CORPUS.items():
        assert (HERE / rel).is_file(), rel
        assert rel.split("/")[1] == "honest" and (TASKS / f"{rel.split('/')[0]}.yaml").is_file(), rel
        assert entry.get("style") and entry.get("expect") in ("pass", "refused"), rel
        if entry["expect"] == "refused":
            assert entry.get("gate") and entry.get("reason") and entry.get("why_honest"), rel
        source = (HERE / rel).read_text()
        assert entry["style"].startswith("(pre-existing)") or source.startswith('"""') and source.splitlines()[0].endswith('"""'), f"{rel}: one-line docstring"
    assert sum(1 for e in CORPUS.values() if not e["style"].startswith("(pre-existing)")) >= 50


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("rel", list(_params()))
def test_honest_kernel_passes_the_verifier(rel, verdicts):
    entry = CORPUS[rel]
    result = verdicts[rel]
    if entry["expect"] == "refused" and not result.passed:
        if result.gate == entry["gate"] and entry["reason"] in result.reason:
            raise RecordedRefusal(f"{result.gate}: {result.reason}")
        pytest.fail(f"{rel}: refused for another reason than recorded: gate {result.gate}: {result.reason}")
    assert result.passed, f"false rejection of {rel} ({entry['style']}): gate {result.gate}: {result.reason}"
    assert result.objective is not None and result.objective > 0
