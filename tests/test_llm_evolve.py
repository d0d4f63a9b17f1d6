"""A tiny evolve run with a scripted LLM (the replay provider through litellm): the recorded
diff improves the matmul seed, and prompt evolution produces at least one new variant."""

import json
from pathlib import Path

import pytest

from kernelfoundry import REPO_DIR
from kernelfoundry.evolve import EvolveConfig
from kernelfoundry.mutate.metaprompt import OPERATORS
from kernelfoundry.mutate.replay import reset_replay
from kernelfoundry.search.session import run_evolution
from kernelfoundry.store import RunStore

REPLAY = Path(__file__).parent / "mutate" / "data" / "matmul_bigger_tiles.jsonl"


@pytest.fixture
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def test_scripted_llm_improves_matmul_and_evolves_a_prompt(tmp_path, interpreter, ray_local):
    reset_replay()
    cfg = EvolveConfig(task=REPO_DIR / "experiments/tasks/matmul.yaml", budget=10, workers=1, seed=0,
                       out=tmp_path / "run", models=[f"replay/{REPLAY}"], quiet=True, archives_root=tmp_path)
    summary, run_dir = run_evolution(cfg)
    store = RunStore(run_dir / "run.sqlite")
    try:
        rows = list(store.iter_candidates())
        seed = rows[0]
        assert seed.mutator == "seed" and seed.passed
        improved = [r for r in rows if r.mutator.startswith("llm:replay/") and r.passed]
        assert improved, [(r.mutator, r.gate, r.reason[:80]) for r in rows]
        best = max(improved, key=lambda r: r.objective)
        assert best.objective > 2 * seed.objective
        assert '"BLOCK_M": [64, 128]' in best.source and best.parent_ids == [seed.id]
        assert best.llm_calls == 1 and best.cost_usd == pytest.approx(0.0125)
        assert summary["best_objective"] == pytest.approx(best.objective)
        # edits that no longer apply are stored as failed candidates at the mutate gate, with the reason
        failed = [r for r in rows if not r.passed]
        assert all(r.gate == "mutate" and "edit did not apply" in r.reason for r in failed)

        calls = list(store.iter_llm_calls())
        assert any(c["purpose"] == "prompt_mutation" and c["error"] is None for c in calls)
        assert summary["llm"]["calls"] == len(calls)
        assert summary["llm"]["cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in calls))

        prompts = summary["prompts"]
        assert prompts["n_evolved"] >= 1 and prompts["n_variants"] >= 3 and prompts["best_credit"] > 0
        evolved = [p for p in store.load_prompts() if p["parent_id"] is not None]
        assert evolved and evolved[0]["origin"] in OPERATORS
        assert "64-256 wide tiles" in evolved[0]["sections"]["strategies"]
    finally:
        store.close()


def _candidates(run_dir: Path) -> list[tuple]:
    store = RunStore(run_dir / "run.sqlite")
    try:
        return [(r.parent_ids, r.kind, r.source, r.passed, r.gate, r.objective, r.cell)
                for r in store.iter_candidates()]
    finally:
        store.close()


def test_recorded_run_replayed_with_its_seed_gives_identical_candidates(tmp_path, interpreter, ray_local):
    from kernelfoundry.export import main as export_main

    def run(model: str, name: str):
        reset_replay()
        # the replay re-proposes the recorded sources; their verdicts come from the first run's cache (what
        # is compared is what the LLM path proposes, from which parents, not the verifier again)
        cfg = EvolveConfig(task=REPO_DIR / "experiments/tasks/matmul.yaml", budget=7, workers=1, seed=3,
                           out=tmp_path / name, models=[model], quiet=True, archives_root=tmp_path,
                           verdict_cache=tmp_path / "verdicts.sqlite")
        return run_evolution(cfg)

    _, first = run(f"replay/{REPLAY}", "recorded")
    log = tmp_path / "recorded.jsonl"
    assert export_main([str(first), "--out", str(tmp_path / "export"), "--llm-log", str(log)]) == 0
    assert log.read_text().count("\n") >= 3
    _, second = run(f"replay/{log}", "replayed")
    recorded, replayed = _candidates(first), _candidates(second)
    assert len(recorded) == 7 and any(c[3] and c[0] for c in recorded)
    assert replayed == recorded


def test_own_prompt_directory_reaches_the_llm_and_bad_templates_are_refused(tmp_path, interpreter, ray_local,
                                                                             capsys):
    from kernelfoundry.evolve import main as evolve_main
    mine = tmp_path / "my_prompts"
    mine.mkdir()
    default = (REPO_DIR / "prompts" / "_rules.j2").read_text()      # a partial every kernel prompt includes
    (mine / "_rules.j2").write_text("HOUSE RULE: keep BLOCK_K at most 64.\n" + default)
    reset_replay()
    task = str(REPO_DIR / "experiments/tasks/matmul.yaml")
    assert evolve_main([task, "--budget", "2", "--workers", "1", "--model", f"replay/{REPLAY}", "--prompts",
                        str(mine), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    store = RunStore(tmp_path / "run" / "run.sqlite")
    try:
        calls = [c for c in store.iter_llm_calls() if c["purpose"] != "prompt_mutation"]
    finally:
        store.close()
    assert calls and all("HOUSE RULE" in json.dumps(c["messages"]) for c in calls)

    (mine / "fix.j2").write_text("{% if %}broken")
    assert evolve_main([task, "--model", f"replay/{REPLAY}", "--prompts", str(mine),
                        "--out", str(tmp_path / "run2")]) == 2
    assert "fix.j2" in capsys.readouterr().err
    assert not (tmp_path / "run2").exists()

    # a template that compiles but fails to render (an undefined name) is refused before the run starts too
    (mine / "fix.j2").unlink()
    (mine / "prompt_mutation.j2").write_text("{{ variant.sectionz }}\n")
    assert evolve_main([task, "--model", f"replay/{REPLAY}", "--prompts", str(mine),
                        "--out", str(tmp_path / "run3")]) == 2
    err = capsys.readouterr().err
    assert "fails to render" in err and "sectionz" in err
    assert not (tmp_path / "run3").exists()
