"""split_row on kernels that ``persistent`` made persistent: the persistent loop is undone first
(``unwrap_persistent``), so a search lineage that went persistent can still split its rows."""

from __future__ import annotations

import ast
import glob
from pathlib import Path

import pytest

from kernelfoundry.mutate.ast_module import KernelModule, Skip, jit_functions, read_params
from kernelfoundry.mutate.ops_persistent import unwrap_persistent
from tests.mutate.test_builtin_run import apply, mismatch, task

SEEDS = sorted(glob.glob(str(Path(__file__).parents[2] / "experiments" / "tasks" / "kernels" / "*.py")))


def persistent_or_none(source: str) -> str | None:
    try:
        return apply("persistent", source)
    except Skip:
        return None


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: Path(p).stem)
def test_unwrap_undoes_persistent(path, tmp_path):
    """Every seed that persistent applies to comes back: the same AST where the seed binds its program
    id once at the top, else the same kernel with the id bound to a name first (checked by running)."""
    source = Path(path).read_text()
    made = persistent_or_none(source)
    if made is None:
        pytest.skip("persistent does not apply to this seed")
    tree, names = unwrap_persistent(KernelModule.parse(made).tree)
    assert names, "nothing unwrapped"
    assert "NUM_PROGRAMS" not in ast.unparse(tree)
    if ast.dump(tree) != ast.dump(ast.parse(source)):
        assert any(isinstance(s, ast.Assign) and "program_id" in ast.unparse(s.value)
                   for s in jit_functions(tree)[names[0]].body)
        assert mismatch(task(Path(path).stem.removesuffix("_naive")), ast.unparse(tree), tmp_path,
                        configs=1) is None


def test_some_seeds_are_covered():
    assert sum(persistent_or_none(Path(p).read_text()) is not None for p in SEEDS) >= 5


@pytest.mark.parametrize("old,new", [
    ("n_tiles=n_rows, num_programs=min(n_rows, NUM_PROGRAMS)",        # stride differs from the grid
     "n_tiles=n_rows, num_programs=min(n_rows, NUM_PROGRAMS) // 2"),
    ("    y = torch.empty_like(x)\n",                                   # NUM_PROGRAMS used elsewhere
     "    y = torch.empty_like(x)\n    assert NUM_PROGRAMS > 0\n"),
    ("for row in range(tl.program_id(0), n_tiles, num_programs):",      # not the persistent stride loop
     "for row in range(tl.program_id(0), n_tiles, 1):"),
])
def test_anything_but_the_written_pattern_is_left_alone(old, new):
    made = apply("persistent", task("layernorm").seeds[0].read_text())
    variant = made.replace(old, new, 1)
    assert variant != made
    tree = KernelModule.parse(variant).tree
    back, names = unwrap_persistent(tree)
    assert back is tree and names == []


@pytest.mark.parametrize("task_name", ["layernorm", "rmsnorm", "softmax"])
def test_split_row_applies_to_a_persistent_kernel_and_matches_reference(task_name, tmp_path):
    t = task(task_name)
    seed = t.seeds[0].read_text()
    made = persistent_or_none(seed)
    if made is None:
        pytest.skip("persistent does not apply to this seed")
    split = apply("split_row", made)
    assert split == apply("split_row", seed)        # the same kernel as splitting the seed itself
    tree = ast.parse(split)
    assert "NUM_PROGRAMS" not in read_params(tree)
    assert not any(a.arg in ("n_tiles", "num_programs") for fn in jit_functions(tree).values() for a in fn.args.args)
    assert mismatch(t, split, tmp_path, configs=2) is None


def test_layernorm_chain_that_stalled_a_search_now_splits(tmp_path):
    """one_pass_variance -> persistent left split_row nothing to apply to (issue 13's layernorm lineage)."""
    t = task("layernorm")
    made = apply("persistent", apply("one_pass_variance", t.seeds[0].read_text()))
    split = apply("split_row", made)
    assert set(jit_functions(ast.parse(split))) == {"layernorm_kernel_part1", "layernorm_kernel"}
    assert mismatch(t, split, tmp_path, configs=2) is None
